import { randomUUID } from "node:crypto";
import { createReadStream, createWriteStream } from "node:fs";
import { mkdir, rename, rm, stat } from "node:fs/promises";
import path from "node:path";
import { Readable } from "node:stream";
import { pipeline } from "node:stream/promises";
import { checkKey, StorageNotFound, type Storage } from "./storage.js";

/** Objects as files under one folder (STORAGE_DIR); a key is the file's relative path. */
export class LocalStorage implements Storage {
  readonly root: string;

  constructor(root: string) {
    this.root = path.resolve(root);
  }

  private file(key: string): string {
    return path.join(this.root, ...checkKey(key).split("/"));
  }

  async put(key: string, body: Readable | Buffer | string): Promise<{ key: string; size: number }> {
    const file = this.file(key);
    await mkdir(path.dirname(file), { recursive: true });
    // Written beside, then renamed: a reader sees the old object or the whole new one, never a part.
    const partial = `${file}.${randomUUID()}.partial`;
    try {
      await pipeline(typeof body === "string" || Buffer.isBuffer(body) ? Readable.from([body]) : body, createWriteStream(partial));
      await rename(partial, file);
    } catch (e) {
      await rm(partial, { force: true });
      throw e;
    }
    return { key, size: (await stat(file)).size };
  }

  async get(key: string): Promise<Readable> {
    const file = this.file(key);
    if (!(await this.exists(key))) throw new StorageNotFound(key);
    return createReadStream(file);
  }

  async delete(key: string): Promise<void> {
    await rm(this.file(key), { force: true });
  }

  async exists(key: string): Promise<boolean> {
    try {
      return (await stat(this.file(key))).isFile();
    } catch (e) {
      if ((e as NodeJS.ErrnoException).code === "ENOENT") return false;
      throw e;
    }
  }
}
