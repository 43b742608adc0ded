import type { Readable } from "node:stream";
import { CsvError, parse } from "csv-parse";
import { cellError, ImportFileError, quoted } from "./errors.js";
import { detectLayout, type ColumnMap, type Field } from "./layouts.js";
import { parseAmount, parseDay } from "./values.js";

/** A chunk of validated rows, column by column: the arguments of app_private.processor_import_stage. */
export interface RowChunk {
  lines: number[];
  ids: string[];
  types: string[];
  amounts: string[];
  fees: string[];
  days: string[];
  descriptions: string[];
  sources: string[];
  currencies: string[];
  /** Bytes of the file read so far (for progress). */
  bytes: number;
}

export interface ReadOptions {
  chunkSize: number;
  /** Called once, with the layout, before the first chunk. */
  onLayout?(columns: ColumnMap): void;
}

const MAX_ID = 255;

/**
 * Streams a processor export: the header picks the layout, each row is checked as it arrives
 * (a bad value stops the read with a message naming its line and column) and rows come out in
 * chunks of `chunkSize`, so a file of any length is never held whole. A real CSV parser: BOM,
 * CRLF, quoted commas, quotes and line breaks.
 */
export async function* readProcessorRows(input: Readable, options: ReadOptions): AsyncGenerator<RowChunk> {
  const parser = parse({ bom: true, info: true, skip_empty_lines: true, relax_quotes: false });
  input.on("error", (e) => parser.destroy(e));
  input.pipe(parser);
  let columns: ColumnMap | undefined;
  let chunk = emptyChunk();
  let endLine = 0;
  let emptyLines = 0;
  try {
    for await (const { record, info } of parser as AsyncIterable<{ record: string[]; info: { lines: number; empty_lines: number; bytes: number } }>) {
      // The line the record starts on (a quoted field may span lines; empty lines are skipped).
      const line = endLine + 1 + (info.empty_lines - emptyLines);
      endLine = info.lines;
      emptyLines = info.empty_lines;
      if (!columns) {
        columns = detectLayout(record);
        options.onLayout?.(columns);
        continue;
      }
      addRow(chunk, columns, record, line);
      if (chunk.lines.length >= options.chunkSize) {
        chunk.bytes = info.bytes;
        yield chunk;
        chunk = emptyChunk();
      }
    }
  } catch (e) {
    if (e instanceof CsvError) {
      const at = (e as CsvError & { lines?: number }).lines;
      throw new ImportFileError(`${at ? `Line ${at}: ` : ""}${e.message.replace(/ on line \d+$/, "")}.`.replace(/\.\.$/, "."));
    }
    throw e;
  } finally {
    input.unpipe(parser);
    input.destroy();
  }
  if (!columns) throw new ImportFileError("The file is empty: line 1 should be the header of a processor export.");
  if (chunk.lines.length > 0) yield chunk;
}

function emptyChunk(): RowChunk {
  return { lines: [], ids: [], types: [], amounts: [], fees: [], days: [], descriptions: [], sources: [], currencies: [], bytes: 0 };
}

function addRow(chunk: RowChunk, columns: ColumnMap, record: string[], line: number): void {
  const cell = (field: Field): string => {
    const i = columns.index[field];
    const v = i >= 0 ? (record[i] ?? "") : "";
    // PostgreSQL text cannot hold NUL.
    if (v.includes("\u0000")) throw cellError(line, columns.label[field], "the value contains the NUL character.");
    return v;
  };
  const id = cell("id").trim();
  if (id === "") throw cellError(line, columns.label.id, "the balance transaction id is empty.");
  if (id.length > MAX_ID) throw cellError(line, columns.label.id, `the id is longer than ${MAX_ID} characters.`);
  const amountText = cell("amount");
  const amount = parseAmount(amountText);
  if (amount === undefined) throw cellError(line, columns.label.amount, `${quoted(amountText)} is not an amount.`);
  const feeText = cell("fee");
  const fee = feeText.trim() === "" ? "0.00" : parseAmount(feeText);
  if (fee === undefined) throw cellError(line, columns.label.fee, `${quoted(feeText)} is not an amount.`);
  const createdText = cell("created");
  const day = parseDay(createdText);
  if (day === undefined) throw cellError(line, columns.label.created, `${quoted(createdText)} is not a date and time (YYYY-MM-DD HH:MM, or M/D/YYYY H:MM as a spreadsheet re-saves it).`);
  chunk.lines.push(line);
  chunk.ids.push(id);
  chunk.types.push(cell("type").trim());
  chunk.amounts.push(amount);
  chunk.fees.push(fee);
  chunk.days.push(day);
  chunk.descriptions.push(cell("description"));
  chunk.sources.push(cell("source").trim());
  // Checked against the organization's by processor_import_post, which names the line.
  chunk.currencies.push(cell("currency").trim());
}
