/**
 * Receipt extraction in a child process, so that a hostile or pathological document cannot
 * stall or kill the API. pdf.js, the canvas renderer and the HEIC decoder all run synchronously:
 * in-process, a 97 KB PDF holding one 10000×10000 image blocked the event loop for 110 s, and a
 * PDF of 150,000 tiny pages exhausted the heap. Here each document gets a deadline and the
 * reader a heap limit; a reader that overruns is killed and the document refused for good.
 *
 * A few reader processes serve every request, each one document at a time (each keeps its OCR
 * engines, which cost about a second to start): a document that takes a reader to its
 * deadline holds that reader alone, and the worker reads one organization's documents one at a
 * time, so another organization's receipt finds a reader free. Each reader is started on first
 * use and replaced after a kill or crash.
 */
import { type ChildProcess, fork } from "node:child_process";
import os from "node:os";
import { fileURLToPath } from "node:url";
import { typescriptChildExecArgv } from "../../typescript-child.js";
import type { DateOrder, ReceiptExtraction } from "../extraction/types.js";
import type { ReaderReply, ReaderRequest } from "./protocol.js";

/** One document must be read within this, or it is refused as unreadable. */
export const EXTRACTION_TIMEOUT_MS = 120_000;

/** The reader's V8 heap: past it the reader dies (and the document is refused), not the API. */
export const READER_HEAP_MB = 768;

/** A reader grown past this after a document is replaced before the next one. A reader holding
 * both OCR engines settles near 1.4 GB after a few scans (onnxruntime's buffers, outside the V8
 * heap): a lower bound would restart it after nearly every image. */
const RECYCLE_RSS_BYTES = 2048 * 1024 * 1024;

/** Starting the reader (loading pdf.js, canvas, the parsers) is not the document's fault. */
const STARTUP_TIMEOUT_MS = 60_000;

/** How long a reader asked to close may take before it is killed. */
const CLOSE_GRACE_MS = 3_000;

/** Readers at once: as many as the worker's reading jobs (worker/run.ts), each up to READER_HEAP_MB. */
export const READERS = 2;

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

/** The reader of each slot, if started; a request holds a slot from start to answer. */
const slots: (Reader | undefined)[] = Array.from({ length: READERS }, () => undefined);
const busy = new Set<number>();
const waiting: ((slot: number) => void)[] = [];
let nextId = 0;

const ENTRY = fileURLToPath(new URL(import.meta.url.endsWith(".ts") ? "./child.ts" : "./child.js", import.meta.url));

function startReader(slot: number): Reader {
  const proc = fork(ENTRY, [], {
    execArgv: typescriptChildExecArgv(ENTRY, READER_HEAP_MB),
    // The readers share the cores: each one's OCR engine takes its part (paddle-ocr.ts).
    env: { ...process.env, OCR_THREADS: process.env.OCR_THREADS ?? String(Math.max(1, Math.floor(os.availableParallelism() / READERS))) },
    serialization: "advanced",
    stdio: ["ignore", "inherit", "inherit", "ipc"],
  });
  const reader: Reader = { proc, ready: Promise.resolve(), exited: false, closing: false };
  proc.once("exit", () => {
    reader.exited = true;
    if (slots[slot] === reader) slots[slot] = undefined;
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
  forget(reader);
  if (!reader.exited) reader.proc.kill("SIGKILL");
}

function forget(reader: Reader): void {
  const slot = slots.indexOf(reader);
  if (slot >= 0) slots[slot] = undefined;
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

async function readOne(slot: number, input: SandboxInput, timeoutMs: number): Promise<ReceiptExtraction> {
  const reader = slots[slot] ??= startReader(slot);
  hold(reader, true);
  try {
    await reader.ready;
  } catch (error) {
    // Not the document's fault: the job may retry.
    hold(reader, false);
    throw error;
  }
  if (reader.exited) return readOne(slot, input, timeoutMs);
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
      if (message.rss > RECYCLE_RSS_BYTES || message.retire) void retire(reader);
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
export async function extractInSandbox(input: SandboxInput, options: { timeoutMs?: number } = {}): Promise<ReceiptExtraction> {
  const slot = await freeSlot();
  try {
    return await readOne(slot, input, options.timeoutMs ?? EXTRACTION_TIMEOUT_MS);
  } finally {
    const next = waiting.shift();
    if (next) next(slot);
    else busy.delete(slot);
  }
}

/** The lowest free slot (so that one request at a time always uses the same reader), else the first to come free. */
function freeSlot(): Promise<number> {
  for (let slot = 0; slot < READERS; slot++) {
    if (!busy.has(slot)) {
      busy.add(slot);
      return Promise.resolve(slot);
    }
  }
  return new Promise((resolve) => waiting.push(resolve));
}

/** Asks a reader to end (closing its OCR engine), killing it if it takes too long. */
async function retire(reader: Reader): Promise<void> {
  forget(reader);
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

/** Ends the reader processes (worker shutdown, tests); the next request starts another. */
export async function closeSandbox(): Promise<void> {
  await Promise.all(slots.filter((reader) => reader !== undefined).map(retire));
}

/** The process id of the first slot's reader, if one is running: the one a lone request uses (tests). */
export function sandboxPid(): number | undefined {
  const reader = slots[0];
  return reader && !reader.exited ? reader.proc.pid : undefined;
}
