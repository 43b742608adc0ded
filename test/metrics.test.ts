import request from "supertest";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { createTenant, startHarness, type Harness, type Tenant } from "./helpers/harness.js";

/** GET /metrics (issue 13): Prometheus text, behind METRICS_TOKEN; counters that move with the traffic. */
let h: Harness;
let t: Tenant;
const TOKEN = "metrics-test-token";
beforeAll(async () => {
  h = await startHarness({ metricsToken: TOKEN, rateLimitPerHour: 3 });
  t = await createTenant(h);
});
afterAll(() => h?.close());

const scrape = () => request(h.handle.app).get("/metrics").set("Authorization", `Bearer ${TOKEN}`);

/** The value of one sample (name and labels exactly as printed), 0 when absent. */
function sample(text: string, series: string): number {
  const line = text.split("\n").find((l) => l.startsWith(`${series} `));
  return line ? Number(line.slice(series.length + 1)) : 0;
}

describe("/metrics", () => {
  it("answers only with the token: 401 without it or with another, 404 when no token is set", async () => {
    expect((await request(h.handle.app).get("/metrics")).status).toBe(401);
    expect((await request(h.handle.app).get("/metrics").set("Authorization", "Bearer wrong")).status).toBe(401);
    expect((await request(h.handle.app).get("/metrics").set("Authorization", TOKEN)).status).toBe(401);
    const res = await scrape();
    expect(res.status).toBe(200);
    expect(res.headers["content-type"]).toMatch(/^text\/plain; version=0\.0\.4/);
    const off = await h.secondApp({ metricsToken: undefined });
    expect((await request(off.app).get("/metrics").set("Authorization", `Bearer ${TOKEN}`)).status).toBe(404);
  });

  it("counts requests by operation and outcome, their latency, rate-limit refusals, jobs, webhook deliveries and pools", async () => {
    const before = (await scrape()).text;
    const ok = '{operation="myOrganizations",outcome="ok"}';
    const error = '{operation="getLedgerEvent",outcome="error"}';
    // Two answered, one that fails in SQL (not found), then the quota of 3 is used up: 429.
    await h.gql("{ myOrganizations { id } }", {}, t.apiKey);
    await h.gql("{ myOrganizations { id } }", {}, t.apiKey);
    await h.gql(`query($o: UUID!) { getLedgerEvent(organizationId: $o, eventId: "${crypto.randomUUID()}") { id } }`, { o: t.organizationId }, t.apiKey);
    expect((await h.gql("{ myOrganizations { id } }", {}, t.apiKey)).status).toBe(429);
    await h.gql("{ myOrganizations { id } }", {}, "Bearer acct_nonsense");
    await h.gql("{ nope }", {}, t.ownerJwt); // fails validation: an answer with errors
    await h.owner.query("select graphile_worker.add_job('match_receipts', json_build_object('organizationId', $1::text), run_at => now() + interval '1 hour')", [t.organizationId]);
    // Webhook deliveries: one of each outcome in the last hour, and one not yet attempted.
    await h.owner.query(`with ep as (insert into app_public.webhook_endpoints (organization_id, url, events, secret_sealed)
        values ($1, 'https://hooks.example.com/in', '{ledger_event.created}', 'v1:sealed') returning id),
      ev as (insert into app_public.webhook_events (organization_id, type, object) values ($1, 'ledger_event.created', '{}') returning id)
      insert into app_public.webhook_deliveries (organization_id, webhook_endpoint_id, webhook_event_id, status, last_attempt_at)
      select $1, ep.id, ev.id, s.status, s.at from ep, ev,
        (values ('succeeded', now()), ('pending', now()), ('failed', now()), ('pending', null)) s(status, at)`, [t.organizationId]);

    const after = (await scrape()).text;
    const delta = (series: string) => sample(after, series) - sample(before, series);
    expect(delta(`accounting_graphql_requests_total${ok}`)).toBe(2);
    expect(delta(`accounting_graphql_requests_total${error}`)).toBe(1);
    expect(delta('accounting_graphql_requests_total{operation="none",outcome="rate_limited"}')).toBe(1);
    expect(delta('accounting_graphql_requests_total{operation="none",outcome="error"}')).toBe(2); // Invalid API Key., { nope }
    expect(delta("accounting_rate_limit_refusals_total")).toBe(1);
    expect(delta('accounting_graphql_request_duration_seconds_count{operation="myOrganizations"}')).toBe(2);
    expect(sample(after, 'accounting_jobs_queued{task="match_receipts"}')).toBeGreaterThanOrEqual(1);
    expect(sample(after, "accounting_jobs_scrape_ok")).toBe(1);
    for (const outcome of ["succeeded", "retrying", "failed"]) {
      expect(sample(after, `accounting_webhook_deliveries_last_hour{outcome="${outcome}"}`), outcome).toBe(1);
    }
    expect(sample(after, "accounting_webhook_deliveries_pending")).toBe(2);
    expect(sample(after, 'accounting_pg_pool_connections{pool="api",state="total"}')).toBeGreaterThan(0);
    expect(after).toMatch(/^accounting_process_cpu_seconds_total /m);
    // Caller input never becomes a label.
    expect(after).not.toMatch(/acct_nonsense/);
  });
});
