/**
 * Receipt extraction in a child process, so that a hostile or pathological document cannot
 * stall or kill the API. pdf.js, the canvas renderer and the HEIC decoder all run synchronously:
 * in-process, a 97 KB PDF holding one 10000×10000 image blocked the event loop for 110 s, and a
 * PDF of 150,000 tiny pages exhausted the heap. Here each document gets a deadline and the
 * reader a heap limit; a reader that overruns is killed and the document refused for good.
 *
 * One reader process serves every request, one at a time (it keeps its OCR engine, which costs
 * about half a second to start). It is started on first use and replaced after a kill or crash.
 */
import { type ChildProcess, fork } from "node:child_process";
import { createRequire } from "node:module";
import { fileURLToPath, pathToFileURL } from "node:url";
import type { DateOrder, ReceiptExtraction } from "../extraction/types.js";
import type { ReaderReply, ReaderRequest } from "./protocol.js";

/** One document must be read within this, or it is refused as unreadable. */
export const EXTRACTION_TIMEOUT_MS = 120_000;

/** The reader's V8 heap: past it the reader dies (and the document is refused), not the API. */
export const READER_HEAP_MB = 768;

/** A reader grown past this after a document is replaced before the next one. */
const RECYCLE_RSS_BYTES = 1536 * 1024 * 1024;

/** Starting the reader (loading pdf.js, canvas, the parsers) is not the document's fault. */
const STARTUP_TIMEOUT_MS = 60_000;

/** How long a reader asked to close may take before it is killed. */
const CLOSE_GRACE_MS = 3_000;

export interface SandboxInput {
  bytes: Buffer;
  contentType: string;
  dateOrder: DateOrder;
}

/** A failure the document itself causes: retrying would fail again. */
class PermanentReadError extends Error {
  readonly permanent = true;
}

interface Reader {
  proc: ChildProcess;
  ready: Promise<void>;
  exited: boolean;
  /** Set when the parent ends it on purpose: a request then in flight did not fail by itself. */
  closing: boolean;
}

let current: Reader | undefined;
let queue: Promise<unknown> = Promise.resolve();
let nextId = 0;

const ENTRY = fileURLToPath(new URL(import.meta.url.endsWith(".ts") ? "./child.ts" : "./child.js", import.meta.url));

/**
 * The reader runs under the same TypeScript loader as this process. Under `tsx` the loader flags
 * are in process.execArgv (`--require …/tsx/dist/preflight.cjs --import …/tsx/dist/loader.mjs`)
 * and are passed on; elsewhere (vitest transforms modules itself) tsx's loader is added.
 */
function readerExecArgv(): string[] {
  const kept: string[] = [];
  const args = process.execArgv;
  for (let i = 0; i < args.length; i++) {
    const arg = args[i];
    if ((arg === "--import" || arg === "--require" || arg === "-r") && /[/\\]tsx[/\\]|^tsx(\/|$)/.test(args[i + 1] ?? "")) {
      kept.push(arg, args[++i]);
    } else if (/^--(import|require)=.*tsx/.test(arg)) {
      kept.push(arg);
    }
  }
  if (!kept.some((arg) => /^--import(=|$)/.test(arg)) && ENTRY.endsWith(".ts")) {
    const loader = createRequire(import.meta.url).resolve("tsx");
    kept.push("--import", pathToFileURL(loader).href);
  }
  return [...kept, `--max-old-space-size=${READER_HEAP_MB}`];
}

function startReader(): Reader {
  const proc = fork(ENTRY, [], {
    execArgv: readerExecArgv(),
    serialization: "advanced",
    stdio: ["ignore", "inherit", "inherit", "ipc"],
  });
  const reader: Reader = { proc, ready: Promise.resolve(), exited: false, closing: false };
  proc.once("exit", () => {
    reader.exited = true;
    if (current === reader) current = undefined;
  });
  reader.ready = new Promise<void>((resolve, reject) => {
    const done = (error?: Error) => {
      clearTimeout(timer);
      proc.off("message", onMessage);
      proc.off("exit", onExit);
      proc.off("error", onError);
      if (error) {
        kill(reader);
        reject(error);
      } else resolve();
    };
    const timer = setTimeout(() => done(new Error(`The document reader did not start within ${STARTUP_TIMEOUT_MS / 1000} s.`)), STARTUP_TIMEOUT_MS);
    const onMessage = (message: ReaderReply) => { if (message.type === "ready") done(); };
    const onExit = (code: number | null, signal: string | null) =>
      done(new Error(`The document reader failed to start (${signal ?? `exit code ${code}`}).`));
    const onError = (error: Error) => done(new Error(`The document reader failed to start: ${error.message}`));
    proc.on("message", onMessage);
    proc.on("exit", onExit);
    proc.on("error", onError);
  });
  // Nothing else handles these: a failed start is reported by the request that awaits it.
  reader.ready.catch(() => undefined);
  return reader;
}

function kill(reader: Reader): void {
  if (current === reader) current = undefined;
  if (!reader.exited) reader.proc.kill("SIGKILL");
}

/** An idle reader must not keep this process alive; a busy one must. */
function hold(reader: Reader, busy: boolean): void {
  if (busy) {
    reader.proc.ref();
    reader.proc.channel?.ref();
  } else {
    reader.proc.unref();
    reader.proc.channel?.unref();
  }
}

async function readOne(input: SandboxInput, timeoutMs: number): Promise<ReceiptExtraction> {
  const reader = current ??= startReader();
  hold(reader, true);
  try {
    await reader.ready;
  } catch (error) {
    // Not the document's fault: the job may retry.
    hold(reader, false);
    throw error;
  }
  if (reader.exited) return readOne(input, timeoutMs);
  const { proc } = reader;
  const id = ++nextId;
  return new Promise<ReceiptExtraction>((resolve, reject) => {
    const finish = () => {
      clearTimeout(timer);
      proc.off("message", onMessage);
      proc.off("exit", onExit);
      if (!reader.exited) hold(reader, false);
    };
    const timer = setTimeout(() => {
      finish();
      kill(reader);
      reject(new PermanentReadError(`Reading the document took longer than ${Math.round(timeoutMs / 100) / 10} s.`));
    }, timeoutMs);
    const onMessage = (message: ReaderReply) => {
      if (message.type === "ready" || message.id !== id) return;
      finish();
      if (message.rss > RECYCLE_RSS_BYTES) void retire(reader);
      if (message.type === "result") return resolve(message.result);
      const error = message.error.permanent ? new PermanentReadError(message.error.message) : new Error(message.error.message);
      reject(error);
    };
    const onExit = () => {
      finish();
      reject(reader.closing
        ? new Error("The document reader was stopped before it finished.")
        : new PermanentReadError("The document could not be read: the reader ran out of memory or crashed."));
    };
    proc.on("message", onMessage);
    proc.on("exit", onExit);
    const request: ReaderRequest = { type: "extract", id, bytes: input.bytes, contentType: input.contentType, dateOrder: input.dateOrder };
    proc.send(request, (error) => {
      if (!error || reader.exited) return; // an exit is reported by onExit
      finish();
      kill(reader);
      reject(new Error(`The document could not be handed to the reader: ${error.message}`));
    });
  });
}

/**
 * Reads a receipt in the reader process. Rejects with `permanent = true` when the document
 * itself is the problem: unreadable, past the deadline, or fatal to the reader.
 */
export function extractInSandbox(input: SandboxInput, options: { timeoutMs?: number } = {}): Promise<ReceiptExtraction> {
  const job = queue.then(() => readOne(input, options.timeoutMs ?? EXTRACTION_TIMEOUT_MS));
  queue = job.catch(() => undefined);
  return job;
}

/** Asks a reader to end (closing its OCR engine), killing it if it takes too long. */
async function retire(reader: Reader): Promise<void> {
  if (current === reader) current = undefined;
  if (reader.exited) return;
  reader.closing = true;
  const exited = new Promise<void>((resolve) => reader.proc.once("exit", () => resolve()));
  const timer = setTimeout(() => kill(reader), CLOSE_GRACE_MS);
  try {
    if (reader.proc.connected) reader.proc.send({ type: "close" } satisfies ReaderRequest);
    else kill(reader);
  } catch {
    kill(reader);
  }
  await exited;
  clearTimeout(timer);
}

/** Ends the reader process (worker shutdown, tests); the next request starts another. */
export async function closeSandbox(): Promise<void> {
  const reader = current;
  if (reader) await retire(reader);
}

/** The reader's process id, if one is running (tests). */
export function sandboxPid(): number | undefined {
  return current && !current.exited ? current.proc.pid : undefined;
}
