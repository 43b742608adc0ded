import { randomBytes } from "node:crypto";
import { existsSync, linkSync, mkdirSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import path from "node:path";
import { secretsKeyOf } from "./secrets/sealed-box.js";

/**
 * Everything the service reads from the environment, with safe local defaults: `npm start` on a
 * fresh machine needs none of it (docs/operating.md, Configuration).
 * This file is the service's only reader of process.env but for src/gc-flags.ts; the table in
 * docs/operating.md, Configuration, lists each variable.
 */
export interface Config {
  port: number;
  host: string;
  /** Owner connection: runs migrations, the worker and the operator CLI. */
  databaseUrl: string | undefined;
  /** API connection: a login role that is neither superuser nor table owner. */
  authDatabaseUrl: string | undefined;
  authenticatorPassword: string;
  jwtSecret: string;
  jwtPublicKey: string | undefined;
  /** Signs RS256 tokens in the CLI's issue_jwt when jwtPublicKey is set. */
  jwtPrivateKey: string | undefined;
  rateLimitPerHour: number;
  /** Local secrets and the embedded database. */
  dataDir: string;
  /** Uploaded files (processor exports, later receipts): the local storage folder. */
  storageDir: string;
  /** The S3-compatible bucket for uploaded files instead of storageDir (S3_BUCKET set). */
  s3: S3Config | undefined;
  embeddedPostgresPort: number;
  worker: boolean;
  workerConcurrency: number;
  graphiql: boolean;
  /**
   * Single-field reads answered from their SQL function's JSON in one round trip (DIRECT_READS,
   * on by default); off: every read is executed by GraphQL (grafast). The answers are the same.
   */
  directReads: boolean;
  /**
   * Single-field mutations answered from their SQL function's JSON (DIRECT_WRITES, on by
   * default); off: every mutation is executed by GraphQL (grafast). The answers are the same.
   */
  directWrites: boolean;
  bodyLimit: string;
  /** Trust X-Forwarded-For from a proxy in front (for the client address in logs). */
  trustProxy: boolean;
  /** Connections of the API's pool (the authenticator's). */
  apiPoolSize: number;
  /**
   * The most database time one API request may take, waits for a connection included; also
   * each statement's limit on the API's connections. The worker and the CLI keep their own.
   */
  statementTimeoutMs: number;
  /** Base of the URLs the service hands out (imageUrl): PUBLIC_URL, no trailing slash. */
  publicUrl: string;
  /** How long a signed file URL (imageUrl) stays valid, in seconds. */
  receiptUrlTtlSeconds: number;
  /** HMAC key of signed file URLs. */
  fileUrlSecret: string;
  /** Shared secret of POST /intake/email and /intake/sms (header X-Intake-Secret). */
  intakeSecret: string;
  /** Port of the SMTP intake listener; null: no listener (SMTP_PORT=off). */
  smtpPort: number | null;
  /** Tenant-given hosts (mailboxes, cloud drives, webhooks) may be loopback: development and tests only. */
  outboundAllowLoopback: boolean;
  /** Seals mailbox passwords and cloud-drive secret keys (AES-256-GCM): SECRETS_KEY, 32 bytes. */
  secretsKey: Buffer;
  /** How often each connected mailbox is scanned, in seconds (MAILBOX_SCAN_INTERVAL). */
  mailboxScanIntervalSeconds: number;
  /** Bearer token of GET /metrics (METRICS_TOKEN); unset: no /metrics at all. */
  metricsToken: string | undefined;
  /** How often each connected cloud-drive folder is scanned, in seconds (CLOUD_DRIVE_SCAN_INTERVAL). */
  cloudDriveScanIntervalSeconds: number;
  /** The wait before a failed webhook delivery's first retry, in seconds (WEBHOOK_RETRY); each later wait is four times longer, at most 12 hours. */
  webhookRetrySeconds: number;
  /** How long a webhook delivery is retried, in seconds (WEBHOOK_RETRY_WINDOW). */
  webhookRetryWindowSeconds: number;
  /** What the operator should know about this configuration (the server logs them at start). */
  notices: string[];
}

export interface S3Config {
  bucket: string;
  region: string;
  endpoint: string | undefined;
  accessKeyId: string;
  secretAccessKey: string;
  forcePathStyle: boolean;
}

function onOff(env: NodeJS.ProcessEnv, name: string, fallback: boolean): boolean {
  const raw = env[name];
  if (raw === undefined || raw === "") return fallback;
  if (["1", "on", "true"].includes(raw.toLowerCase())) return true;
  if (["0", "off", "false"].includes(raw.toLowerCase())) return false;
  throw new Error(`${name} must be "on" or "off", got "${raw}".`);
}

/** S3_BUCKET set: uploaded files go to that bucket, with the credentials it needs. */
function s3Config(env: NodeJS.ProcessEnv, notices: string[]): S3Config | undefined {
  const bucket = env.S3_BUCKET || undefined;
  const endpoint = env.S3_ENDPOINT || undefined;
  if (!bucket) {
    const set = ["S3_ENDPOINT", "S3_ACCESS_KEY_ID", "S3_SECRET_ACCESS_KEY", "S3_FORCE_PATH_STYLE"].filter((n) => env[n]);
    if (set.length > 0) notices.push(`${set.join(", ")} set but S3_BUCKET is not: uploaded files stay in STORAGE_DIR.`);
    return undefined;
  }
  const missing = ["S3_ACCESS_KEY_ID", "S3_SECRET_ACCESS_KEY"].filter((n) => !env[n]);
  if (missing.length > 0) {
    throw new Error(`S3_BUCKET is set, so the S3 storage needs ${missing.join(" and ")} too.`);
  }
  return {
    bucket,
    region: env.S3_REGION || "us-east-1",
    endpoint,
    accessKeyId: env.S3_ACCESS_KEY_ID!,
    secretAccessKey: env.S3_SECRET_ACCESS_KEY!,
    forcePathStyle: onOff(env, "S3_FORCE_PATH_STYLE", endpoint !== undefined),
  };
}

/** A secret from the environment, else one generated once and kept in `dir`. */
export function localSecret(dir: string, name: string, envValue?: string): { value: string; generatedIn?: string } {
  if (envValue) return { value: envValue };
  const file = path.join(dir, name);
  if (existsSync(file)) return { value: readFileSync(file, "utf8").trim() };
  mkdirSync(dir, { recursive: true });
  const value = randomBytes(32).toString("hex");
  // Written whole under another name, then linked into place only if no other process (the API
  // and a worker starting together on one data folder) got there first: both then use its secret.
  // A file system without hard links gets an exclusive create instead (a reader at that very
  // moment could see it empty).
  const draft = `${file}.${process.pid}.${randomBytes(4).toString("hex")}`;
  try {
    writeFileSync(draft, value + "\n", { mode: 0o600 });
    linkSync(draft, file);
  } catch (e) {
    const code = (e as NodeJS.ErrnoException).code;
    if (code === "EEXIST") return { value: readFileSync(file, "utf8").trim() };
    if (code !== "EPERM" && code !== "ENOTSUP" && code !== "EOPNOTSUPP") throw e;
    try {
      writeFileSync(file, value + "\n", { mode: 0o600, flag: "wx" });
    } catch (again) {
      if ((again as NodeJS.ErrnoException).code !== "EEXIST") throw again;
      return { value: readFileSync(file, "utf8").trim() };
    }
  } finally {
    rmSync(draft, { force: true });
  }
  return { value, generatedIn: file };
}

/** PUBLIC_URL: where clients reach this service (imageUrl links start with it), no trailing slash. */
function publicUrl(env: NodeJS.ProcessEnv, host: string, port: number): string {
  const hostPart = host.includes(":") ? `[${host}]` : host; // an IPv6 address
  const raw = (env.PUBLIC_URL || `http://${hostPart}:${port}`).replace(/\/+$/, "");
  let url: URL | undefined;
  try {
    url = new URL(raw);
  } catch {
    url = undefined;
  }
  if (!url || !["http:", "https:"].includes(url.protocol)) throw new Error(`PUBLIC_URL must be an http(s) URL, got "${raw}".`);
  return raw;
}

/** SMTP_PORT: a port (0: any free one), or `off` for no SMTP listener. */
function smtpPort(env: NodeJS.ProcessEnv): number | null {
  if (env.SMTP_PORT?.toLowerCase() === "off") return null;
  return wholeNumber(env, "SMTP_PORT", 2525, 0);
}

/** A duration such as 15m, 900s or 1h (a bare number is minutes), in seconds: at least a minute (the scans' cron runs each minute). */
function minutes(env: NodeJS.ProcessEnv, name: string, fallbackMinutes: number): number {
  return duration(env, name, fallbackMinutes * 60, { unit: "m", min: 60, example: "15m, 900s or 1h", least: "a minute" });
}

/** A duration such as 250ms, 30s, 15m, 1h or 3d (a bare number is in `unit`), in seconds. */
function duration(env: NodeJS.ProcessEnv, name: string, fallbackSeconds: number,
  rule: { unit: string; min: number; example: string; least: string }): number {
  const raw = env[name];
  if (raw === undefined || raw === "") return fallbackSeconds;
  const m = /^(\d+(?:\.\d+)?)\s*(ms|s|m|h|d)?$/i.exec(raw.trim());
  const units: Record<string, number> = { ms: 0.001, s: 1, m: 60, h: 3600, d: 86400 };
  const seconds = m ? Number(m[1]) * units[(m[2] ?? rule.unit).toLowerCase()] : NaN;
  if (!(seconds >= rule.min)) throw new Error(`${name} must be a duration of at least ${rule.least}, such as ${rule.example}; got "${raw}".`);
  return seconds;
}

function wholeNumber(env: NodeJS.ProcessEnv, name: string, fallback: number, min = 1): number {
  const raw = env[name];
  if (raw === undefined || raw === "") return fallback;
  const n = Number(raw);
  if (!Number.isInteger(n) || n < min) throw new Error(`${name} must be a whole number of at least ${min}, got "${raw}".`);
  return n;
}

/** The pino level: LOG_LEVEL, else silent under tests and info otherwise. */
export function logLevel(env: NodeJS.ProcessEnv = process.env): string {
  return env.LOG_LEVEL ?? (env.NODE_ENV === "test" ? "silent" : "info");
}

export function loadConfig(env: NodeJS.ProcessEnv = process.env): Config {
  const dataDir = path.resolve(env.DATA_DIR ?? ".data");
  const notices: string[] = [];
  const jwtSecret = localSecret(dataDir, "jwt-secret", env.JWT_SECRET);
  if (jwtSecret.generatedIn) {
    notices.push(`JWT_SECRET is not set: using a generated secret kept in ${jwtSecret.generatedIn}. Set JWT_SECRET in production.`);
  }
  const intakeSecret = localSecret(dataDir, "intake-secret", env.INTAKE_SECRET);
  if (intakeSecret.generatedIn) {
    notices.push(`INTAKE_SECRET is not set: using a generated secret kept in ${intakeSecret.generatedIn}. Set INTAKE_SECRET in production.`);
  }
  const secretsKey = localSecret(dataDir, "secrets-key", env.SECRETS_KEY);
  if (secretsKey.generatedIn) {
    notices.push(`SECRETS_KEY is not set: using a generated key kept in ${secretsKey.generatedIn}. Set SECRETS_KEY in production, and keep it: sealed mailbox passwords cannot be read without it.`);
  }
  const mailboxScanIntervalSeconds = minutes(env, "MAILBOX_SCAN_INTERVAL", 15);
  const port = wholeNumber(env, "PORT", 5678, 0); // 0: any free port
  const host = env.HOST ?? "127.0.0.1";
  return {
    port,
    host,
    databaseUrl: env.DATABASE_URL || undefined,
    authDatabaseUrl: env.AUTH_DATABASE_URL || undefined,
    authenticatorPassword: localSecret(dataDir, "authenticator-password", env.AUTHENTICATOR_PASSWORD).value,
    jwtSecret: jwtSecret.value,
    jwtPublicKey: env.JWT_PUBLIC_KEY || undefined,
    jwtPrivateKey: env.JWT_PRIVATE_KEY || undefined,
    rateLimitPerHour: wholeNumber(env, "RATE_LIMIT_PER_HOUR", 5000),
    dataDir,
    storageDir: path.resolve(env.STORAGE_DIR || path.join(dataDir, "storage")),
    s3: s3Config(env, notices),
    embeddedPostgresPort: wholeNumber(env, "EMBEDDED_PG_PORT", 54329),
    worker: env.WORKER !== "off",
    workerConcurrency: wholeNumber(env, "WORKER_CONCURRENCY", 2),
    graphiql: env.GRAPHIQL !== "off",
    directReads: onOff(env, "DIRECT_READS", true),
    directWrites: onOff(env, "DIRECT_WRITES", true),
    bodyLimit: env.BODY_LIMIT ?? "1mb",
    trustProxy: env.TRUST_PROXY === "1",
    apiPoolSize: wholeNumber(env, "API_POOL_SIZE", 20, 2),
    statementTimeoutMs: wholeNumber(env, "STATEMENT_TIMEOUT_MS", 5000, 100),
    publicUrl: publicUrl(env, host, port),
    receiptUrlTtlSeconds: wholeNumber(env, "RECEIPT_URL_TTL", 900),
    fileUrlSecret: localSecret(dataDir, "file-url-secret", env.FILE_URL_SECRET).value,
    intakeSecret: intakeSecret.value,
    smtpPort: smtpPort(env),
    outboundAllowLoopback: onOff(env, "OUTBOUND_ALLOW_LOOPBACK", false),
    secretsKey: secretsKeyOf(secretsKey.value),
    mailboxScanIntervalSeconds,
    metricsToken: env.METRICS_TOKEN || undefined,
    cloudDriveScanIntervalSeconds: env.CLOUD_DRIVE_SCAN_INTERVAL ? minutes(env, "CLOUD_DRIVE_SCAN_INTERVAL", 15) : mailboxScanIntervalSeconds,
    webhookRetrySeconds: duration(env, "WEBHOOK_RETRY", 60, { unit: "s", min: 0.01, example: "60s or 1m", least: "10ms" }),
    webhookRetryWindowSeconds: duration(env, "WEBHOOK_RETRY_WINDOW", 3 * 86400, { unit: "s", min: 0.01, example: "3d or 72h", least: "10ms" }),
    notices,
  };
}
