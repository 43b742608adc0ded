import { createReadStream } from "node:fs";
import { open, stat } from "node:fs/promises";
import { Readable } from "node:stream";
import { CsvError, parse } from "csv-parse";
import { CSV_OPTIONS, csvReadOptions, csvStatement, detectDelimiter, notCsv } from "./csv.js";
import type { CsvRecord } from "./csv-layout.js";
import { parseDateFormatOption } from "./dates.js";
import { MAX_CSV_BYTES, MAX_OFX_BYTES, MAX_PREAMBLE_ROWS, MAX_STATEMENT_ROWS, tooLarge, tooManyRows } from "./limits.js";
import { looksLikeOfx } from "./ofx.js";
import { MAX_WHOLE_FILE_BYTES, readBankFile, wholeFileFormat, wholeFileTooLarge } from "./read-bytes.js";
import { byteOrderMark, decode, notText, type TextEncodingName } from "./read-text.js";
import { bankFile, type BankFile, type BankFileOptions } from "./statement.js";

/** The start of the file that tells OFX from CSV: OFX names itself in its first 4,096 characters (4 bytes each at most). */
const HEAD_BYTES = 4 * 4096 + 3;
/** Bytes read at a time. */
const CHUNK_BYTES = 64 * 1024;

/**
 * A statement file on disk, read as readBankFile reads bytes, with the same rows and messages, but
 * a CSV is streamed and stops at the limits (limits.ts): a file too large is refused before it is
 * read, one with too many rows as soon as the rows say so, so memory holds at most the rows the
 * import may take. An OFX file is read whole (its parser needs all of it), up to its own limit.
 * File system errors (no such file, a folder) are thrown as they are.
 */
export async function readBankStatementFile(file: string, options: BankFileOptions = {}): Promise<BankFile> {
  const info = await stat(file);
  if (!info.isFile()) {
    throw Object.assign(new Error(info.isDirectory() ? "it is a folder" : "it is not a regular file"), { code: info.isDirectory() ? "EISDIR" : "ENOTFILE" });
  }
  const head = await readHead(file);
  if (looksLikeOfxHead(head)) {
    if (info.size > MAX_OFX_BYTES) throw tooLarge(info.size, "OFX");
    const bytes = await readUpTo(file, MAX_OFX_BYTES);
    return readBankFile(bytes, options);
  }
  // QIF, MT940 and camt.053: read whole, like OFX, up to their limit.
  const whole = headReadings(head).map(wholeFileFormat).find((f) => f);
  if (whole) {
    if (info.size > MAX_WHOLE_FILE_BYTES) throw wholeFileTooLarge(info.size, whole);
    const bytes = await readUpTo(file, MAX_WHOLE_FILE_BYTES, (n) => wholeFileTooLarge(n, whole));
    return readBankFile(bytes, options);
  }
  if (info.size > MAX_CSV_BYTES) throw tooLarge(info.size, "CSV");
  const dateOrder = options.dateFormat ? parseDateFormatOption(options.dateFormat) : undefined;
  const bom = byteOrderMark(head);
  // UTF-16 by its mark; otherwise UTF-8, and Windows-1252 when the file turns out not to be UTF-8.
  let encoding: TextEncodingName = bom.encoding ?? "utf-8";
  let records: CsvRecord[];
  // The separator, from the options or the first lines (a separator is ASCII in every encoding read here).
  const delimiter = csvReadOptions(options).delimiter ?? detectDelimiter(decode(bom.encoding === "utf-16le" || bom.encoding === "utf-16be" ? bom.encoding : "utf-8", head.subarray(bom.length)));
  try {
    records = await csvRecords(file, encoding, bom.length, delimiter);
  } catch (e) {
    if (encoding !== "utf-8" || (e as NodeJS.ErrnoException).code !== "ERR_ENCODING_INVALID_ENCODED_DATA") throw e;
    encoding = "windows-1252";
    records = await csvRecords(file, encoding, bom.length, delimiter);
  }
  return bankFile(csvStatement(records, { preset: options.preset, map: options.map, dateOrder, ...csvReadOptions(options), delimiter }), encoding);
}

async function readHead(file: string): Promise<Buffer> {
  const handle = await open(file);
  try {
    const { buffer, bytesRead } = await handle.read(Buffer.alloc(HEAD_BYTES), 0, HEAD_BYTES, 0);
    return buffer.subarray(0, bytesRead);
  } finally {
    await handle.close();
  }
}

/** Whether the file starts as OFX, read either way a file without a mark may be written. */
function looksLikeOfxHead(head: Buffer): boolean {
  return headReadings(head).some(looksLikeOfx);
}

/** The start of the file as text, read either way a file without a mark may be written. */
function headReadings(head: Buffer): string[] {
  const bom = byteOrderMark(head);
  const body = head.subarray(bom.length);
  return bom.encoding === "utf-16le" || bom.encoding === "utf-16be" ? [decode(bom.encoding, body)] : [decode("utf-8", body), decode("windows-1252", body)];
}

async function readUpTo(file: string, max: number, tooBig: (bytes: number) => Error = (n) => tooLarge(n, "OFX")): Promise<Buffer> {
  const chunks: Buffer[] = [];
  let bytes = 0;
  for await (const chunk of createReadStream(file, { highWaterMark: CHUNK_BYTES }) as AsyncIterable<Buffer>) {
    bytes += chunk.length;
    // The file grew after its size was checked.
    if (bytes > max) throw tooBig(bytes);
    chunks.push(chunk);
  }
  return Buffer.concat(chunks);
}

/**
 * The CSV records of the file, parsed as they are read (csv-parse's stream, the options of a whole
 * file). Stops at the first record past the most a statement may hold. A text that is not valid in
 * the encoding throws ERR_ENCODING_INVALID_ENCODED_DATA (UTF-8 only: the others decode any bytes).
 */
async function csvRecords(file: string, encoding: TextEncodingName, skip: number, delimiter: string): Promise<CsvRecord[]> {
  const input = createReadStream(file, { start: skip, highWaterMark: CHUNK_BYTES });
  const text = Readable.from(decoded(input, encoding));
  const parser = parse({ ...CSV_OPTIONS, delimiter });
  text.on("error", (e) => parser.destroy(e));
  text.pipe(parser);
  const records: CsvRecord[] = [];
  try {
    for await (const { record, info } of parser as AsyncIterable<{ record: string[]; info: { lines: number } }>) {
      if (records.length === MAX_STATEMENT_ROWS + MAX_PREAMBLE_ROWS) throw tooManyRows();
      records.push({ line: info.lines, cells: record });
    }
  } catch (e) {
    if (e instanceof CsvError) throw notCsv(e);
    throw e;
  } finally {
    text.destroy();
    input.destroy();
  }
  return records;
}

async function* decoded(input: AsyncIterable<Buffer>, encoding: TextEncodingName): AsyncGenerator<string> {
  const utf16 = encoding === "utf-16le" || encoding === "utf-16be";
  const decoder = new TextDecoder(encoding, { fatal: encoding === "utf-8", ignoreBOM: true });
  let bytes = 0;
  for await (const chunk of input) {
    bytes += chunk.length;
    if (bytes > MAX_CSV_BYTES) throw tooLarge(bytes, "CSV");
    if (!utf16 && chunk.includes(0)) throw notText();
    const piece = decoder.decode(chunk, { stream: true });
    if (piece !== "") yield piece;
  }
  const last = decoder.decode();
  if (last !== "") yield last;
}
