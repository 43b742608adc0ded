import { mkdtempSync, rmSync } from "node:fs";
import os from "node:os";
import path from "node:path";
import { LocalStorage } from "../../src/storage/local.js";

/**
 * A test file's own folder, with stored files under `storageDir`, which becomes STORAGE_DIR: the
 * harness's configuration and the worker's tasks read it (through loadConfig) when they first run,
 * and the CLI's child processes inherit it. Set it before the harness starts.
 */
export function tempStorage(prefix: string) {
  const tmp = mkdtempSync(path.join(os.tmpdir(), prefix));
  const storageDir = path.join(tmp, "storage");
  process.env.STORAGE_DIR = storageDir;
  return { tmp, storageDir, storage: new LocalStorage(storageDir), remove: () => rmSync(tmp, { recursive: true, force: true }) };
}
