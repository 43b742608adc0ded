import http from "node:http";
import https from "node:https";
import { ListObjectsV2Command, S3Client } from "@aws-sdk/client-s3";
import { checkOutbound, guardedLookup, isLoopback, OutboundRefused, type OutboundOptions } from "../../outbound/guard.js";
import { deadline, networkFailure, SourceError, withoutSecret } from "../errors.js";

/** A cloud-drive folder as connectCloudDrive stored it (migrations/fixtures/sources/cloud-drives.sql). */
export interface CloudDriveSettings {
  /** An origin such as https://s3.example.com; null: AWS S3 in `region`. */
  endpoint: string | null;
  bucket: string;
  prefix: string;
  region: string;
  accessKeyId: string;
}

const CONNECT_TIMEOUT_MS = 10_000;
const REQUEST_TIMEOUT_MS = 30_000;
/** connectCloudDrive's test in all. */
const TEST_DEADLINE_MS = 30_000;

/**
 * A client of the tenant's store that connects only where the outbound guard allows (decisions
 * §13): the endpoint's host is checked before anything is sent, and every connection the SDK
 * opens resolves through the guard. Plain http is for loopback development servers only: the
 * signed requests would otherwise cross networks readable by anyone on the way.
 */
export async function cloudDriveClient(settings: CloudDriveSettings, secretAccessKey: string, outbound: OutboundOptions): Promise<S3Client> {
  const url = new URL(settings.endpoint ?? `https://s3.${settings.region}.amazonaws.com`);
  const secure = url.protocol === "https:";
  if (!secure && !outbound.allowLoopback) throw new SourceError("The endpoint must be an https URL.");
  let checked;
  try {
    checked = await checkOutbound(url.hostname, outbound);
  } catch (e) {
    if (e instanceof OutboundRefused) throw new SourceError(e.message);
    throw e;
  }
  // Plain http in development, to a loopback server only: to the checked address itself, so a
  // name answered differently later cannot take it elsewhere.
  if (!secure && !(url.protocol === "http:" && isLoopback(checked.address))) throw new SourceError("The endpoint must be an https URL.");
  const endpoint = secure ? settings.endpoint ?? undefined
    : `http://${checked.family === 6 ? `[${checked.address}]` : checked.address}${url.port ? `:${url.port}` : ""}`;
  const lookup = guardedLookup(outbound);
  return new S3Client({
    region: settings.region,
    endpoint,
    forcePathStyle: settings.endpoint !== null,
    credentials: { accessKeyId: settings.accessKeyId, secretAccessKey },
    requestChecksumCalculation: "WHEN_REQUIRED",
    responseChecksumValidation: "WHEN_REQUIRED",
    maxAttempts: 2,
    requestHandler: {
      httpAgent: new http.Agent({ lookup, keepAlive: true } as http.AgentOptions),
      httpsAgent: new https.Agent({ lookup, keepAlive: true } as https.AgentOptions),
      connectionTimeout: CONNECT_TIMEOUT_MS, requestTimeout: REQUEST_TIMEOUT_MS, throwOnRequestTimeout: true,
    },
  });
}

/** What a failed call to the store means, in words, without the secret. */
export function describeStoreError(e: unknown, settings: CloudDriveSettings, secret: string): string {
  if (e instanceof SourceError) return e.message;
  const where = settings.endpoint ?? `AWS S3 (${settings.region})`;
  const err = e as { name?: string; message?: string; $metadata?: { httpStatusCode?: number }; cause?: unknown };
  const status = err?.$metadata?.httpStatusCode;
  let message: string;
  if (["InvalidAccessKeyId", "SignatureDoesNotMatch", "AccessDenied", "Forbidden"].includes(err?.name ?? "") || status === 403) {
    message = `The store at ${where} refused the credentials for bucket "${settings.bucket}": check the access key id and secret.`;
  } else if (err?.name === "NoSuchBucket" || (status === 404 && err?.name !== "NoSuchKey")) {
    message = `The bucket "${settings.bucket}" does not exist at ${where}.`;
  } else {
    message = networkFailure(e, where, CONNECT_TIMEOUT_MS / 1000) ?? networkFailure(err?.cause, where, CONNECT_TIMEOUT_MS / 1000)
      ?? `Could not read the folder at ${where}: ${err?.message || String(e)}`;
  }
  return withoutSecret(message, secret);
}

/** connectCloudDrive's test: list the objects under the prefix. Null when it worked, else why not. */
export async function testCloudDrive(settings: CloudDriveSettings, secret: string, outbound: OutboundOptions): Promise<string | null> {
  let client: S3Client | undefined;
  const limit = deadline(TEST_DEADLINE_MS, "The store");
  try {
    client = await cloudDriveClient(settings, secret, outbound);
    // One page, as a scan reads it (not MaxKeys 1: s3rver 3.7.1 on Node 22 fails any truncated
    // listing, with ERR_OSSL_EVP_UNSUPPORTED; see the README).
    await client.send(new ListObjectsV2Command({ Bucket: settings.bucket, Prefix: settings.prefix || undefined }), { abortSignal: limit.signal });
    return null;
  } catch (e) {
    return describeStoreError(limit.expired(e), settings, secret);
  } finally {
    limit.clear();
    client?.destroy();
  }
}
