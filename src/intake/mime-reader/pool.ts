/**
 * A few MIME reader threads (./thread.ts) shared by every intake transport. Each reads one
 * message at a time, under a heap cap and a deadline: a message that overruns either has its
 * thread terminated (the API's event loop never waits on it) and is refused; the thread is
 * replaced on next use. Threads are started on first use and kept between messages.
 */
import { fileURLToPath } from "node:url";
import { Worker } from "node:worker_threads";
import { tsxLoaderArgs } from "../../typescript-child.js";
import type { ReadReply } from "./protocol.js";

/** Starting a thread (loading mailparser) is not the message's fault. */
const STARTUP_TIMEOUT_MS = 30_000;

export interface ReaderLimits {
  /** Messages read at once, each on its own thread. */
  threads: number;
  /** Each thread's V8 heap (old generation), in MiB. */
  heapMb: number;
  /** How long one message may take on its thread, in milliseconds. */
  deadlineMs: number;
}

/** The message took its thread past a bound, or killed it: the message is refused, the thread replaced. */
export class ReaderOverrun extends Error {
  constructor(readonly bound: "deadline" | "memory" | "crash", message: string) {
    super(message);
  }
}

interface Reader {
  thread: Worker;
  ready: Promise<void>;
  exited: boolean;
}

const ENTRY = new URL(import.meta.url.endsWith(".ts") ? "./thread.ts" : "./thread.js", import.meta.url);

/**
 * The thread runs under the same TypeScript loader as this process: under `tsx` and under vitest
 * (which transforms modules itself, not for threads) the entry is a .ts file, so tsx's loader is
 * imported first. Nothing else of this process's flags is passed (a thread refuses most of them).
 */
function threadExecArgv(): string[] {
  return tsxLoaderArgs(fileURLToPath(ENTRY));
}

export class MimeReaders {
  /** The reader of each slot, if started; a reservation holds a slot until released. */
  private readonly slots: (Reader | undefined)[];
  private readonly busy = new Set<number>();
  private readonly waiting: ((slot: number) => void)[] = [];
  private nextId = 0;

  constructor(private readonly limits: ReaderLimits) {
    this.slots = Array.from({ length: limits.threads }, () => undefined);
  }

  /**
   * Waits for a free thread and holds it: `read` hands it one message, `release` frees it.
   * Taken before the message is read off the wire, so the slots bound the messages in memory too.
   */
  async reserve(): Promise<{ read(bytes: Uint8Array): Promise<ReadReply & { type: "read" | "unreadable" }>; release(): void }> {
    const slot = await this.freeSlot();
    let released = false;
    return {
      read: (bytes) => this.readOn(slot, bytes),
      release: () => {
        if (released) return;
        released = true;
        const next = this.waiting.shift();
        if (next) next(slot);
        else this.busy.delete(slot);
      },
    };
  }

  /** Ends every thread (shutdown, tests); the next message starts another. */
  async close(): Promise<void> {
    const readers = this.slots.filter((r): r is Reader => r !== undefined);
    this.slots.fill(undefined);
    await Promise.all(readers.map((r) => r.thread.terminate()));
  }

  private freeSlot(): Promise<number> {
    for (let slot = 0; slot < this.slots.length; slot++) {
      if (!this.busy.has(slot)) {
        this.busy.add(slot);
        return Promise.resolve(slot);
      }
    }
    return new Promise((resolve) => this.waiting.push(resolve));
  }

  /** `bytes` must own its whole ArrayBuffer: it is transferred to the thread, not copied. */
  private async readOn(slot: number, bytes: Uint8Array): Promise<ReadReply & { type: "read" | "unreadable" }> {
    const reader = this.slots[slot] ??= this.start(slot);
    reader.thread.ref();
    try {
      await reader.ready;
    } catch (error) {
      this.kill(reader);
      throw error;
    }
    // Ended between starting and now (a crash): this slot gets a new thread.
    if (reader.exited) return this.readOn(slot, bytes);
    const { thread } = reader;
    const id = ++this.nextId;
    return new Promise((resolve, reject) => {
      let failure: ReaderOverrun | undefined;
      const finish = () => {
        clearTimeout(timer);
        thread.off("message", onMessage);
        thread.off("error", onError);
        thread.off("exit", onExit);
        if (!reader.exited) thread.unref();
      };
      const timer = setTimeout(() => {
        finish();
        this.kill(reader);
        reject(new ReaderOverrun("deadline", `The message took too long to read (more than ${this.limits.deadlineMs / 1000} s).`));
      }, this.limits.deadlineMs);
      const onMessage = (reply: ReadReply) => {
        if (reply.type === "ready" || reply.id !== id) return;
        finish();
        resolve(reply);
      };
      const onError = (error: Error & { code?: string }) => {
        failure = error.code === "ERR_WORKER_OUT_OF_MEMORY"
          ? new ReaderOverrun("memory", `The message needs more than ${this.limits.heapMb} MiB of memory to read.`)
          : new ReaderOverrun("crash", `The message could not be read: ${error.message}`);
      };
      const onExit = () => {
        finish();
        reject(failure ?? new Error("The MIME reader thread stopped before it finished."));
      };
      thread.on("message", onMessage);
      thread.on("error", onError);
      thread.on("exit", onExit);
      thread.postMessage({ id, bytes }, [bytes.buffer as ArrayBuffer]);
    });
  }

  private start(slot: number): Reader {
    const thread = new Worker(ENTRY, {
      execArgv: threadExecArgv(),
      resourceLimits: { maxOldGenerationSizeMb: this.limits.heapMb },
    });
    const reader: Reader = { thread, ready: Promise.resolve(), exited: false };
    thread.once("exit", () => {
      reader.exited = true;
      if (this.slots[slot] === reader) this.slots[slot] = undefined;
    });
    // Kept for the start's failure; with no read in flight an error must not become an uncaught exception.
    let lastError: Error | undefined;
    thread.on("error", (error) => { lastError = error; });
    reader.ready = new Promise<void>((resolve, reject) => {
      const done = (error?: Error) => {
        clearTimeout(timer);
        thread.off("message", onMessage);
        thread.off("exit", onExit);
        if (error) reject(error);
        else resolve();
      };
      const timer = setTimeout(() => done(new Error(`The MIME reader thread did not start within ${STARTUP_TIMEOUT_MS / 1000} s.`)), STARTUP_TIMEOUT_MS);
      const onMessage = (reply: ReadReply) => { if (reply.type === "ready") done(); };
      const onExit = (code: number) => done(new Error(`The MIME reader thread failed to start: ${lastError?.message ?? `exit code ${code}`}.`));
      thread.on("message", onMessage);
      thread.once("exit", onExit);
    });
    reader.ready.catch(() => undefined);
    return reader;
  }

  private kill(reader: Reader): void {
    const slot = this.slots.indexOf(reader);
    if (slot >= 0) this.slots[slot] = undefined;
    if (!reader.exited) void reader.thread.terminate();
  }
}
