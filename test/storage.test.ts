import { randomBytes } from "node:crypto";
import { existsSync, mkdtempSync, readdirSync, rmSync } from "node:fs";
import os from "node:os";
import path from "node:path";
import { Readable } from "node:stream";
import { buffer } from "node:stream/consumers";
import { CreateBucketCommand } from "@aws-sdk/client-s3";
// @ts-expect-error s3rver ships no type declarations
import S3rver from "s3rver";
import { afterAll, beforeAll, describe, expect, it, vi } from "vitest";
import { loadConfig } from "../src/config.js";
import { createStorage } from "../src/storage/index.js";
import { LocalStorage } from "../src/storage/local.js";
import { S3Storage } from "../src/storage/s3.js";
import { InvalidStorageKey, StorageNotFound, type Storage } from "../src/storage/storage.js";

const tmp = mkdtempSync(path.join(os.tmpdir(), "storage-test-"));
afterAll(() => rmSync(tmp, { recursive: true, force: true }));

interface Backend {
  storage: Storage;
  /** A count that grows with any I/O the backend does (requests sent, files made). */
  io(): number;
  close(): Promise<void>;
}

function filesUnder(dir: string): number {
  return readdirSync(dir, { recursive: true }).length;
}

const backends: Array<[string, () => Promise<Backend>]> = [
  ["LocalStorage", async () => {
    const base = mkdtempSync(path.join(tmp, "local-"));
    return { storage: new LocalStorage(path.join(base, "root")), io: () => filesUnder(base), close: async () => {} };
  }],
  ["S3Storage (s3rver)", async () => {
    const directory = mkdtempSync(path.join(tmp, "s3rver-"));
    const server = new S3rver({ port: 0, address: "127.0.0.1", silent: true, directory });
    const { port } = await server.run();
    const storage = new S3Storage({
      bucket: "test-bucket",
      region: "us-east-1",
      endpoint: `http://127.0.0.1:${port}`,
      accessKeyId: "S3RVER",
      secretAccessKey: "S3RVER",
      forcePathStyle: true,
      prefix: "tenant-files",
    });
    await storage.client.send(new CreateBucketCommand({ Bucket: "test-bucket" }));
    const send = vi.spyOn(storage.client, "send");
    return {
      storage,
      io: () => send.mock.calls.length,
      close: async () => {
        storage.client.destroy();
        await server.close();
      },
    };
  }],
];

/** `size` random bytes and a stream of them in 64 KiB chunks (no known length). */
function bigBody(size: number): { bytes: Buffer; stream: () => Readable } {
  const bytes = randomBytes(size);
  return {
    bytes,
    stream: () => Readable.from((function* () {
      for (let i = 0; i < size; i += 65536) yield bytes.subarray(i, Math.min(i + 65536, size));
    })()),
  };
}

describe.each(backends)("%s", (_name, make) => {
  let b: Backend;
  let s: Storage;
  beforeAll(async () => {
    b = await make();
    s = b.storage;
  });
  afterAll(async () => { await b?.close(); });

  it("puts a 3 MB stream and gets it back byte for byte", async () => {
    const { bytes, stream } = bigBody(3 * 1024 * 1024);
    expect(await s.put("big/file.bin", stream())).toEqual({ key: "big/file.bin", size: bytes.length });
    const back = await buffer(await s.get("big/file.bin"));
    expect(back.length).toBe(bytes.length);
    expect(back.equals(bytes)).toBe(true);
  });

  it("puts strings and buffers, and an overwrite replaces the object", async () => {
    expect(await s.put("over.txt", "first version")).toEqual({ key: "over.txt", size: 13 });
    expect((await buffer(await s.get("over.txt"))).toString()).toBe("first version");
    expect(await s.put("over.txt", Buffer.from("2nd"))).toEqual({ key: "over.txt", size: 3 });
    expect((await buffer(await s.get("over.txt"))).toString()).toBe("2nd");
    await s.put("over.txt", Readable.from([Buffer.from("third, "), Buffer.from("streamed")]));
    expect((await buffer(await s.get("over.txt"))).toString()).toBe("third, streamed");
  });

  it("tells whether an object exists", async () => {
    expect(await s.exists("here/yes.csv")).toBe(false);
    await s.put("here/yes.csv", "a,b\n");
    expect(await s.exists("here/yes.csv")).toBe(true);
    expect(await s.exists("here/no.csv")).toBe(false);
    expect(await s.exists("here")).toBe(false); // a folder of keys is no object
  });

  it("rejects a get of a missing key with StorageNotFound", async () => {
    const err = await s.get("missing/nothing.csv").catch((e: unknown) => e);
    expect(err).toBeInstanceOf(StorageNotFound);
    expect(err).toMatchObject({ key: "missing/nothing.csv", permanent: true });
  });

  it("deletes, and deleting again (or a key never written) is no error", async () => {
    await s.put("gone/soon.txt", "bye");
    await s.delete("gone/soon.txt");
    expect(await s.exists("gone/soon.txt")).toBe(false);
    await expect(s.get("gone/soon.txt")).rejects.toBeInstanceOf(StorageNotFound);
    await expect(s.delete("gone/soon.txt")).resolves.toBeUndefined();
    await expect(s.delete("never/was.txt")).resolves.toBeUndefined();
  });

  it("keeps keys with nested segments apart", async () => {
    const keys = ["org-1/imports/2026/a.csv", "org-1/imports/2026/b.csv", "org-1/imports/a.csv", "org-2/imports/2026/a.csv"];
    for (const k of keys) await s.put(k, `content of ${k}`);
    for (const k of keys) expect((await buffer(await s.get(k))).toString()).toBe(`content of ${k}`);
    await s.delete(keys[0]);
    expect(await Promise.all(keys.map((k) => s.exists(k)))).toEqual([false, true, true, true]);
  });

  it("refuses invalid keys with a permanent error before any I/O", async () => {
    const before = b.io();
    for (const key of ["../x", "/abs", "a//b", "", "a/./b", "a/../b", "sp ace", "x/"]) {
      for (const op of [
        () => s.put(key, "nope"),
        () => s.put(key, Readable.from(["nope"])),
        () => s.get(key),
        () => s.delete(key),
        () => s.exists(key),
      ]) {
        const err = await op().then(() => undefined, (e: unknown) => e);
        expect(err, `key ${JSON.stringify(key)}`).toBeInstanceOf(InvalidStorageKey);
        expect(err).toMatchObject({ permanent: true });
      }
    }
    expect(b.io()).toBe(before);
    expect(existsSync("/abs")).toBe(false);
  });

  it("leaves no object when the body stream fails part way", async () => {
    await s.put("fail/me.bin", "old");
    let sent = 0;
    const failing = new Readable({
      read() {
        if (sent++ < 3) this.push(randomBytes(65536));
        else this.destroy(new Error("source broke"));
      },
    });
    await expect(s.put("fail/me.bin", failing)).rejects.toThrow("source broke");
    expect((await buffer(await s.get("fail/me.bin"))).toString()).toBe("old");
    await expect(s.put("fail/new.bin", Readable.from((async function* () {
      yield Buffer.from("partial");
      throw new Error("source broke");
    })()))).rejects.toThrow("source broke");
    expect(await s.exists("fail/new.bin")).toBe(false);
  });
});

describe("storage configuration", () => {
  const base = { DATA_DIR: path.join(tmp, "data"), JWT_SECRET: "x", AUTHENTICATOR_PASSWORD: "y" };

  it("uses the local folder without S3_BUCKET", () => {
    const config = loadConfig({ ...base, STORAGE_DIR: path.join(tmp, "files") });
    expect(config.s3).toBeUndefined();
    expect(createStorage(config)).toBeInstanceOf(LocalStorage);
  });

  it("uses the bucket with S3_BUCKET, path style by default only with an endpoint", () => {
    const creds = { S3_BUCKET: "b", S3_ACCESS_KEY_ID: "k", S3_SECRET_ACCESS_KEY: "s" };
    const withEndpoint = loadConfig({ ...base, ...creds, S3_ENDPOINT: "http://127.0.0.1:9000" });
    expect(withEndpoint.s3).toEqual({
      bucket: "b", region: "us-east-1", endpoint: "http://127.0.0.1:9000", accessKeyId: "k", secretAccessKey: "s", forcePathStyle: true,
    });
    expect(createStorage(withEndpoint)).toBeInstanceOf(S3Storage);
    expect(loadConfig({ ...base, ...creds, S3_REGION: "eu-west-1" }).s3).toMatchObject({ region: "eu-west-1", endpoint: undefined, forcePathStyle: false });
    expect(loadConfig({ ...base, ...creds, S3_ENDPOINT: "http://h", S3_FORCE_PATH_STYLE: "off" }).s3?.forcePathStyle).toBe(false);
    expect(() => loadConfig({ ...base, ...creds, S3_FORCE_PATH_STYLE: "maybe" })).toThrow(/S3_FORCE_PATH_STYLE/);
  });

  it("refuses S3_BUCKET without credentials, naming what is missing", () => {
    expect(() => loadConfig({ ...base, S3_BUCKET: "b" })).toThrow("S3_BUCKET is set, so the S3 storage needs S3_ACCESS_KEY_ID and S3_SECRET_ACCESS_KEY too.");
    expect(() => loadConfig({ ...base, S3_BUCKET: "b", S3_ACCESS_KEY_ID: "k" })).toThrow(/needs S3_SECRET_ACCESS_KEY too/);
  });
});
