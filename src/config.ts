import { randomBytes } from "node:crypto";
import { existsSync, mkdirSync, readFileSync, writeFileSync } from "node:fs";
import path from "node:path";
import { logger } from "./logger.js";

/** Everything the service reads from the environment, with safe local defaults (decisions §1). */
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
  rateLimitPerHour: number;
  storageDir: string;
  publicUrl: string;
  dataDir: string;
  worker: boolean;
  graphiql: boolean;
  bodyLimit: string;
  /** Connections of the API's pool (the authenticator's). */
  apiPoolSize: number;
  /**
   * The most database time one API request may take, waits for a connection included; also
   * each statement's limit on the API's connections. The worker and the CLI keep their own.
   */
  statementTimeoutMs: number;
}

const dataDir = path.resolve(process.env.DATA_DIR ?? ".data");

/** A secret from the environment, else one generated once and kept under the data folder. */
export function localSecret(name: string, envValue: string | undefined, warn: string | null): string {
  if (envValue) return envValue;
  const file = path.join(dataDir, name);
  if (existsSync(file)) return readFileSync(file, "utf8").trim();
  mkdirSync(dataDir, { recursive: true });
  const value = randomBytes(32).toString("hex");
  writeFileSync(file, value + "\n", { mode: 0o600 });
  if (warn) logger.warn({ file }, warn);
  return value;
}

function wholeNumber(env: NodeJS.ProcessEnv, name: string, fallback: number, min = 1): number {
  const raw = env[name];
  if (raw === undefined || raw === "") return fallback;
  const n = Number(raw);
  if (!Number.isInteger(n) || n < min) throw new Error(`${name} must be a whole number of at least ${min}, got "${raw}".`);
  return n;
}

export function loadConfig(env: NodeJS.ProcessEnv = process.env): Config {
  const port = wholeNumber(env, "PORT", 5678, 0); // 0: any free port
  return {
    port,
    host: env.HOST ?? "127.0.0.1",
    databaseUrl: env.DATABASE_URL || undefined,
    authDatabaseUrl: env.AUTH_DATABASE_URL || undefined,
    authenticatorPassword: localSecret("authenticator-password", env.AUTHENTICATOR_PASSWORD, null),
    jwtSecret: localSecret("jwt-secret", env.JWT_SECRET,
      "JWT_SECRET is not set: using a generated secret kept in the data folder. Set JWT_SECRET in production."),
    jwtPublicKey: env.JWT_PUBLIC_KEY || undefined,
    rateLimitPerHour: wholeNumber(env, "RATE_LIMIT_PER_HOUR", 5000),
    storageDir: path.resolve(env.STORAGE_DIR ?? path.join(dataDir, "objects")),
    publicUrl: (env.PUBLIC_URL ?? `http://localhost:${port}`).replace(/\/$/, ""),
    dataDir,
    worker: env.WORKER !== "off",
    graphiql: env.GRAPHIQL !== "off",
    bodyLimit: env.BODY_LIMIT ?? "1mb",
    apiPoolSize: wholeNumber(env, "API_POOL_SIZE", 20, 2),
    statementTimeoutMs: wholeNumber(env, "STATEMENT_TIMEOUT_MS", 5000, 100),
  };
}
