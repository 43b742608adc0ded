import http from "node:http";
import https from "node:https";
import { S3Client } from "@aws-sdk/client-s3";
import { checkOutbound, guardedLookup, isLoopback, OutboundRefused, type OutboundOptions } from "../../outbound/guard.js";
import { deadline, networkFailure, SourceError, withoutSecret } from "../errors.js";
import { StoreAnswers } from "./answer-limits.js";
import { listPage } from "./listing.js";

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
/** Until an answer's headers are in (the handler clears it then): the time to its first byte. */
const REQUEST_TIMEOUT_MS = 30_000;
/** A connection silent this long, mid-answer too, is closed: an honest store never pauses so long. */
const SOCKET_IDLE_MS = 30_000;
/** connectCloudDrive's test in all. */
const TEST_DEADLINE_MS = 30_000;

/** A client of the tenant's store, and the count and limits of what the store sends it. */
export interface CloudDrive { client: S3Client; answers: StoreAnswers }

/** The store, in words, for messages. */
export function storeName(settings: CloudDriveSettings): string {
  return settings.endpoint ?? `AWS S3 (${settings.region})`;
}

/**
 * A client of the tenant's store that connects only where the outbound guard allows (docs/api.md,
 * Outbound connections): the endpoint's host is checked before anything is sent, and every
 * connection the SDK opens resolves through the guard. Plain http is for loopback development
 * servers only: the signed requests would otherwise cross networks readable by anyone on the way.
 * Every answer is bounded in bytes and time (StoreAnswers); the caller destroys the client when
 * done, which closes its connections.
 */
export async function cloudDriveClient(settings: CloudDriveSettings, secretAccessKey: string, outbound: OutboundOptions): Promise<CloudDrive> {
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
  const client = new S3Client({
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
      socketTimeout: SOCKET_IDLE_MS,
    },
  });
  return { client, answers: new StoreAnswers(client, storeName(settings)) };
}

/** What a failed call to the store means, in words, without the secret. */
export function describeStoreError(e: unknown, settings: CloudDriveSettings, secret: string): string {
  if (e instanceof SourceError) return withoutSecret(e.message, secret);
  const where = storeName(settings);
  const err = e as { name?: string; code?: string; message?: string; $metadata?: { httpStatusCode?: number }; cause?: unknown };
  const status = err?.$metadata?.httpStatusCode;
  // Node's HTTP parser: headers past its 16 KiB, or no HTTP at all.
  const parser = err?.code ?? (err?.cause as { code?: string } | undefined)?.code ?? "";
  let message: string;
  if (parser === "HPE_HEADER_OVERFLOW") {
    message = `The store at ${where} sent more than 16 KB of headers in one answer and was cut off.`;
  } else if (parser.startsWith("HPE_")) {
    message = `The store at ${where} answered with something other than HTTP and was cut off.`;
  } else if (["InvalidAccessKeyId", "SignatureDoesNotMatch", "AccessDenied", "Forbidden"].includes(err?.name ?? "") || status === 403) {
    message = `The store at ${where} refused the credentials for bucket "${settings.bucket}": check the access key id and secret.`;
  } else if (err?.name === "NoSuchBucket" || (status === 404 && err?.name !== "NoSuchKey")) {
    message = `The bucket "${settings.bucket}" does not exist at ${where}.`;
  } else if (err?.name === "TimeoutError" && !/establish a connection/.test(err.message ?? "")) {
    // Connected, then no answer's first byte within its time, or silence within an answer.
    message = `${where} did not answer within ${REQUEST_TIMEOUT_MS / 1000} s.`;
  } else {
    message = networkFailure(e, where, CONNECT_TIMEOUT_MS / 1000) ?? networkFailure(err?.cause, where, CONNECT_TIMEOUT_MS / 1000)
      ?? `Could not read the folder at ${where}: ${err?.message || String(e)}`;
  }
  return withoutSecret(message, secret);
}

/** connectCloudDrive's test: list the objects under the prefix. Null when it worked, else why not. */
export async function testCloudDrive(settings: CloudDriveSettings, secret: string, outbound: OutboundOptions): Promise<string | null> {
  let drive: CloudDrive | undefined;
  const limit = deadline(TEST_DEADLINE_MS, "The store");
  try {
    drive = await cloudDriveClient(settings, secret, outbound);
    // One page, as a scan reads it and held to the same rules (not MaxKeys 1: s3rver 3.7.1 on
    // Node 22 fails any truncated listing, with ERR_OSSL_EVP_UNSUPPORTED; docs/api.md, Upstream
    // defects met).
    await listPage(drive, settings, { after: null }, limit.signal);
    return null;
  } catch (e) {
    return describeStoreError(limit.expired(drive ? drive.answers.failure(e) : e), settings, secret);
  } finally {
    limit.clear();
    drive?.client.destroy();
  }
}
