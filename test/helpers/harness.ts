import { randomUUID } from "node:crypto";
import jwt from "jsonwebtoken";
import pg from "pg";
import request from "supertest";
import { inject } from "vitest";
import { loadConfig, type Config } from "../../src/config.js";
import { authenticatorUrl, makeApiPool, makePool } from "../../src/db/pools.js";
import { makeApp, type AppHandle, type AppOptions } from "../../src/http/app.js";
import { withDatabase } from "./global-setup.js";

export interface Harness {
  config: Config;
  /** Owner connection to this test file's database: fixtures and assertions on raw rows. */
  owner: pg.Pool;
  /** The API's role (RLS applies): for raw-SQL tenancy checks. */
  auth: pg.Pool;
  databaseUrl: string;
  handle: AppHandle;
  /** POST /graphql; `credential` is a full Authorization header value, or none. */
  gql(query: string, variables?: Record<string, unknown>, credential?: string, headers?: Record<string, string>): Promise<request.Response>;
  /** Another app over the same database (a second server process, as far as PostgreSQL can tell). */
  secondApp(overrides?: Partial<Config>): Promise<AppHandle>;
  close(): Promise<void>;
}

/** Configuration overrides, and the outbound resolver a test stubs (never configuration). */
export type HarnessOptions = Partial<Config> & Pick<AppOptions, "outboundResolve">;

/** POST /graphql to `app` (the harness's, or a `secondApp`); `credential` is a full Authorization header value, or none. */
export function gqlTo(app: AppHandle, query: string, variables?: Record<string, unknown>, credential?: string, headers: Record<string, string> = {}) {
  let r = request(app.app).post("/graphql").set("Content-Type", "application/json");
  if (credential) r = r.set("Authorization", credential);
  for (const [k, v] of Object.entries(headers)) r = r.set(k, v);
  return r.send(JSON.stringify({ query, variables }));
}

/** A fresh database cloned from the migrated template, and the real app over it. */
export async function startHarness({ outboundResolve, ...overrides }: HarnessOptions = {}): Promise<Harness> {
  const serverUrl = inject("serverUrl");
  const templateDb = inject("templateDb");
  const dbName = `accounting_test_${randomUUID().replace(/-/g, "").slice(0, 16)}`;
  const admin = new pg.Client({ connectionString: serverUrl });
  await admin.connect();
  await admin.query(`create database ${dbName} template ${templateDb}`);
  await admin.end();

  const databaseUrl = withDatabase(serverUrl, dbName);
  const config = { ...loadConfig(), databaseUrl, ...overrides };
  // makePool: an error on an idle client (e.g. the forced drop below) is logged, not thrown.
  const owner = makePool(databaseUrl, 5);
  const auth = makeApiPool(authenticatorUrl(databaseUrl, config.authenticatorPassword), config);
  const apps: AppHandle[] = [];
  const extraPools: pg.Pool[] = [];
  const handle = await makeApp(config, { owner, auth }, { outboundResolve });
  apps.push(handle);
  return {
    config, owner, auth, databaseUrl, handle,
    gql: (query, variables, credential, headers) => gqlTo(handle, query, variables, credential, headers),
    async secondApp(o = {}) {
      // Its own pools: to PostgreSQL it is another server process.
      const auth2 = makeApiPool(authenticatorUrl(databaseUrl, config.authenticatorPassword), { ...config, ...o });
      extraPools.push(auth2);
      const a = await makeApp({ ...config, ...o }, { owner, auth: auth2 }, { outboundResolve });
      apps.push(a);
      return a;
    },
    async close() {
      for (const a of apps) await a.close();
      // Every pool has an error handler (makePool): a connection still closing when the database
      // is dropped below is logged, never an unhandled error that fails the run.
      for (const p of extraPools) await p.end();
      await owner.end();
      await auth.end();
      const admin = new pg.Client({ connectionString: serverUrl });
      await admin.connect();
      await admin.query(`drop database if exists ${dbName} with (force)`);
      await admin.end();
    },
  };
}

export interface Tenant {
  organizationId: string;
  name: string;
  ownerId: string;
  ownerEmail: string;
  /** `Bearer acct_…` */
  apiKey: string;
  apiKeyId: string;
  /** `JWT …` of the owner. */
  ownerJwt: string;
}

/** An organization with an owner, a JWT for the owner and an API key, made as the operator would. */
export async function createTenant(h: Harness, name = `Org ${randomUUID().slice(0, 8)}`): Promise<Tenant> {
  const { rows: [org] } = await h.owner.query("select id from app_private.create_organization($1)", [name]);
  const email = `owner-${randomUUID().slice(0, 8)}@example.test`;
  const ownerId = await createUser(h, email);
  await h.owner.query("select app_private.add_member($1, $2, 'owner')", [org.id, email]);
  const { rows: [{ key }] } = await h.owner.query("select app_private.create_api_key($1, 'test') as key", [org.id]);
  return {
    organizationId: org.id, name, ownerId, ownerEmail: email,
    apiKey: `Bearer ${key.secret}`, apiKeyId: key.apiKey.id, ownerJwt: jwtFor(h, ownerId),
  };
}

export async function createUser(h: Harness, email = `user-${randomUUID().slice(0, 8)}@example.test`): Promise<string> {
  const { rows: [u] } = await h.owner.query("select id from app_private.create_user($1)", [email]);
  return u.id;
}

export const jwtFor = (h: Harness, userId: string, options: jwt.SignOptions = { expiresIn: "1h" }) =>
  `JWT ${jwt.sign({ sub: userId }, h.config.jwtSecret, { algorithm: "HS256", ...options })}`;

/** The data of one root field, failing the test with the errors when there are any. */
export function dataOf(res: request.Response, field: string): any {
  if (res.body.errors) throw new Error(`GraphQL errors: ${JSON.stringify(res.body.errors)}`);
  return res.body.data[field];
}

/** The one error of a response: its message and code. */
export function errorOf(res: request.Response): { message: string; code: string } {
  const e = res.body.errors?.[0];
  if (!e) throw new Error(`Expected an error, got ${JSON.stringify(res.body)}`);
  return { message: e.message, code: e.extensions?.code };
}
