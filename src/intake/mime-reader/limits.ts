/** What the MIME reader thread reads of a message, and what it keeps. */

/**
 * The longest HTML body turned into text, in characters. html-to-text's time grows with the
 * square of a long line's length (a one-line table: 256 KiB in 0.14 s, 512 KiB in 1.2 s, 1 MiB
 * in 6 s); HTML receipts stay far below it (Gmail clips messages past 102 KB, so senders keep
 * them shorter). A longer body keeps its attachments; its text is left empty.
 */
export const HTML_TO_TEXT_MAX_CHARS = 256 * 1024;

/** The text body kept: as much as receipt extraction reads of a text receipt (MAX_TEXT_CHARS). */
export const TEXT_MAX_CHARS = 100_000;

/**
 * Headers of one MIME part, in bytes: a real message's Received, DKIM and ARC lines come to tens
 * of kilobytes; mailparser's own default (1 MiB) would let each of the parts below carry a megabyte.
 */
export const MAX_HEADER_BYTES = 256 * 1024;

/**
 * MIME parts of one message: it makes at most 20 receipts, and a newsletter with its inline
 * images stays well under this (mailparser's own default is 1,000).
 */
export const MAX_MIME_PARTS = 256;
