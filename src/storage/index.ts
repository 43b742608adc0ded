import type { Config } from "../config.js";
import { LocalStorage } from "./local.js";
import { S3Storage } from "./s3.js";
import type { Storage } from "./storage.js";

export { checkKey, keySegment, StorageNotFound, type Storage } from "./storage.js";

/** The configured storage: the S3-compatible bucket when S3_BUCKET is set, else the local folder STORAGE_DIR. */
export function createStorage(config: Pick<Config, "storageDir"> & Partial<Pick<Config, "s3">>): Storage {
  return config.s3 ? new S3Storage(config.s3) : new LocalStorage(config.storageDir);
}
