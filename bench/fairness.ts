import { execFileSync } from "node:child_process";
import path from "node:path";
import autocannon from "autocannon";
import jwt from "jsonwebtoken";
import pg from "pg";
import { benchDatabase, databaseUrl, startServer } from "./support.js";

/**
 * `npm run bench -- fairness [--events N] [--seconds S] [--reuse]`: one organization hammers the
 * service with the heaviest requests it can make (20 aliases of a search over N events, default
 * 300,000, through an API key and through a JWT session at once) while another makes ordinary
 * requests one after the other. Prints the other organization's latencies alone and under the
 * load, and what became of the heavy requests. The target (issue 7): the other's p99 under 200 ms.
 */
const DB = "accounting_bench_fairness";
const JWT_SECRET = "bench-jwt-secret";

export async function run(args: string[]) {
  const events = Number(args[args.indexOf("--events") + 1] || 0) || 300_000;
  const seconds = Number(args[args.indexOf("--seconds") + 1] || 0) || 20;
  const reuse = args.includes("--reuse");
  const dbUrl = reuse ? databaseUrl(DB) : await benchDatabase(DB);
  const owner = new pg.Pool({ connectionString: dbUrl, max: 2 });
  const heavy = await organization(owner, dbUrl, "Bench Heavy", events, reuse);
  const quiet = await organization(owner, dbUrl, "Bench Quiet", 2_000, reuse);
  const sampleEvent = (await owner.query("select id from app_public.ledger_events where organization_id = $1 limit 1", [quiet.org])).rows[0].id;
  await owner.end();

  const server = await startServer(dbUrl, { JWT_SECRET });
  try {
    const search = Array.from({ length: 20 }, (_, i) =>
      `s${i}: listLedgerEvents(organizationId: $o, search: "${"aeiou"[i % 5]}", sortBy: "merchantName", offset: ${i * 1000}) { totalCount items { id merchantName } }`).join(" ");
    const heavyBody = { query: `query($o: UUID!) { ${search} }`, variables: { o: heavy.org } };
    const ordinary = [
      { query: "{ myOrganizations { id name } }" },
      { query: "query($o: UUID!) { listLedgerEvents(organizationId: $o) { totalCount items { id merchantName functionalAmount } } }", variables: { o: quiet.org } },
      { query: "query($o: UUID!, $e: UUID!) { getLedgerEvent(organizationId: $o, eventId: $e) { id status } }", variables: { o: quiet.org, e: sampleEvent } },
    ];

    const alone = await ordinaryLoad(server.url, quiet.apiKey, ordinary, Math.min(seconds, 10));
    console.log(`quiet organization alone:       ${describe(alone)}`);

    const hammer = (headers: Record<string, string>) => autocannon({
      url: `${server.url}/graphql`, method: "POST", connections: 16, duration: seconds + 2, timeout: 30,
      headers: { "content-type": "application/json", ...headers }, body: JSON.stringify(heavyBody),
    });
    const heavyRuns = Promise.all([
      hammer({ authorization: heavy.apiKey }),
      hammer({ authorization: heavy.jwt, "x-organization-id": heavy.org }),
    ]);
    await new Promise((r) => setTimeout(r, 1000)); // let the heavy load fill its share first
    const loaded = await ordinaryLoad(server.url, quiet.apiKey, ordinary, seconds);
    const [viaKey, viaJwt] = await heavyRuns;
    console.log(`quiet organization under load:  ${describe(loaded)}`);
    for (const [name, r] of [["API key", viaKey], ["JWT session", viaJwt]] as const) {
      console.log(`heavy organization (${name}, 16 connections, 20-alias searches over ${events.toLocaleString("en-US")} events): `
        + `${r.requests.total} responses, p50 ${r.latency.p50} ms, p99 ${r.latency.p99} ms, ${r.non2xx} non-2xx, ${r.errors} errors, ${r.timeouts} timeouts`);
    }
    const verdict = loaded.p99 < 200 ? "met" : "NOT met";
    console.log(`target: the quiet organization's p99 under 200 ms while the heavy one hammers: ${verdict} (${loaded.p99.toFixed(1)} ms)`);
  } finally {
    await server.stop();
  }
}

interface Org { org: string; apiKey: string; jwt: string }

/** An organization with `events` generated events, an API key and an owner's JWT. */
async function organization(owner: pg.Pool, dbUrl: string, name: string, events: number, reuse: boolean): Promise<Org> {
  let org: string | undefined = reuse
    ? (await owner.query("select id from app_public.organizations where name = $1", [name])).rows[0]?.id
    : undefined;
  if (!org) {
    org = (await owner.query("select id from app_private.create_organization($1)", [name])).rows[0].id as string;
    await owner.query(`insert into app_public.accounts (organization_id, name, account_type, classification)
      values ($1, 'Office Supplies', 'expense', 'expense'), ($1, 'Travel', 'expense', 'expense')`, [org]);
    const t0 = Date.now();
    execFileSync("psql", [dbUrl, "-q", "-v", "ON_ERROR_STOP=1", "-v", `org=${org}`, "-v", `events=${events}`,
      "-f", path.resolve("bench/ledger-data.sql")], { stdio: ["ignore", "ignore", "inherit"] });
    console.log(`${name}: generated ${events.toLocaleString("en-US")} events in ${((Date.now() - t0) / 1000).toFixed(1)} s`);
  }
  const email = `owner-${org.slice(0, 8)}@bench.test`;
  const user = (await owner.query("select id from app_public.users where email = $1", [email])).rows[0]?.id
    ?? (await owner.query("select id from app_private.create_user($1)", [email])).rows[0].id;
  await owner.query("select app_private.add_member($1, $2, 'owner')", [org, email]).catch(() => undefined); // already one on reuse
  const { rows: [{ key }] } = await owner.query("select app_private.create_api_key($1, 'bench') as key", [org]);
  return { org, apiKey: `Bearer ${key.secret}`, jwt: `JWT ${jwt.sign({ sub: user }, JWT_SECRET, { algorithm: "HS256", expiresIn: "2h" })}` };
}

interface Latencies { n: number; p50: number; p99: number; max: number; errors: number }

/** Two clients, each sending the ordinary requests in turn, one after the other, for `seconds`. */
async function ordinaryLoad(url: string, auth: string, bodies: unknown[], seconds: number): Promise<Latencies> {
  const times: number[] = [];
  let errors = 0;
  const until = Date.now() + seconds * 1000;
  await Promise.all([0, 1].map(async (client) => {
    for (let i = client; Date.now() < until; i++) {
      const started = performance.now();
      const res = await fetch(`${url}/graphql`, {
        method: "POST", headers: { "content-type": "application/json", authorization: auth }, body: JSON.stringify(bodies[i % bodies.length]),
      });
      const body = (await res.json()) as { errors?: unknown };
      times.push(performance.now() - started);
      if (!res.ok || body.errors) errors++;
    }
  }));
  times.sort((a, b) => a - b);
  const at = (q: number) => times[Math.min(times.length - 1, Math.floor(q * times.length))];
  return { n: times.length, p50: at(0.5), p99: at(0.99), max: times[times.length - 1], errors };
}

const describe = (l: Latencies) =>
  `${l.n} requests, p50 ${l.p50.toFixed(1)} ms, p99 ${l.p99.toFixed(1)} ms, max ${l.max.toFixed(1)} ms, ${l.errors} errors`;
