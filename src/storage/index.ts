import type { Config } from "../config.js";
import { LocalStorage } from "./local.js";
import type { Storage } from "./storage.js";

export { checkKey, keySegment, StorageNotFound, type Storage } from "./storage.js";

/** The configured storage: the local folder STORAGE_DIR (an S3-compatible backend comes with receipts). */
export function createStorage(config: Pick<Config, "storageDir">): Storage {
  return new LocalStorage(config.storageDir);
}
