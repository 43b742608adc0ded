/** API thread → reader thread: one raw message, its bytes transferred (not copied). */
export interface ReadRequest {
  id: number;
  bytes: Uint8Array;
}

/** One attachment that may be a receipt; its bytes come back transferred. */
export interface ReadPart {
  filename: string;
  contentType: string | undefined;
  content: Uint8Array;
}

/** What intake needs of a message, as the reader thread found it. */
export interface ReadEmail {
  messageId: string | null;
  sender: string | null;
  recipients: string[];
  parts: ReadPart[];
  text: string;
  /** Why the HTML body was not turned into text (too long, nested too deep), or null. */
  htmlNotRead: string | null;
}

/** Reader thread → API thread. */
export type ReadReply =
  | { type: "ready" }
  | { type: "read"; id: number; email: ReadEmail }
  /** The message itself cannot be read: sending it again cannot help. */
  | { type: "unreadable"; id: number; reason: string };
