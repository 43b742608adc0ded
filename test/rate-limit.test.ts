import request from "supertest";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { createTenant, dataOf, startHarness, type Harness, type Tenant } from "./helpers/harness.js";

const QUOTA = 5;
const MY_ORGS = "{ myOrganizations { id } }";
let h: Harness;
beforeAll(async () => { h = await startHarness({ rateLimitPerHour: QUOTA }); });
afterAll(() => h?.close());

const windowOf = async (t: Tenant) =>
  (await h.owner.query("select request_count from app_public.rate_limit_windows where api_key_id = $1", [t.apiKeyId])).rows[0]?.request_count;

describe("rate limit (docs/api.md, Rate limit)", () => {
  it("carries the headers on every API key response, then answers 429 with Retry-After", async () => {
    const t = await createTenant(h);
    // The window opens with the first request: between `before` and its answer (bounds that hold
    // however slow the machine is).
    const before = Math.floor(Date.now() / 1000);
    let firstAnswered = 0;
    for (let i = 1; i <= QUOTA; i++) {
      const res = await h.gql(MY_ORGS, {}, t.apiKey);
      if (i === 1) firstAnswered = Math.ceil(Date.now() / 1000);
      expect(res.status).toBe(200);
      expect(res.headers["x-ratelimit-limit"]).toBe(String(QUOTA));
      expect(res.headers["x-ratelimit-remaining"]).toBe(String(QUOTA - i));
      const reset = Number(res.headers["x-ratelimit-reset"]);
      expect(reset).toBeGreaterThanOrEqual(before + 3600);
      expect(reset).toBeLessThanOrEqual(firstAnswered + 3600);
    }
    const limited = await h.gql(MY_ORGS, {}, t.apiKey);
    expect(limited.status).toBe(429);
    expect(limited.body).toEqual({ errors: [{ message: "Rate Limit Exceeded. 5 Requests/Hour.", extensions: { code: "RATE_LIMITED" } }] });
    expect(limited.headers["x-ratelimit-remaining"]).toBe("0");
    const retryAfter = Number(limited.headers["retry-after"]);
    expect(retryAfter).toBeGreaterThanOrEqual(1);
    expect(retryAfter).toBeLessThanOrEqual(3600);
    // Even a malformed request with a valid key counts, and stays refused.
    const bad = await request(h.handle.app).post("/graphql").set("Authorization", t.apiKey).set("Content-Type", "application/json").send("{");
    expect(bad.status).toBe(429);
    expect(await windowOf(t)).toBe(QUOTA + 2);
  });

  it("the message follows the configured quota (5,000 by default)", async () => {
    const { rateLimitMessage } = await import("../src/http/authenticate.js");
    expect(rateLimitMessage(5000)).toBe("Rate Limit Exceeded. 5,000 Requests/Hour.");
  });

  it("starts a new window after an hour", async () => {
    const t = await createTenant(h);
    for (let i = 0; i <= QUOTA; i++) await h.gql(MY_ORGS, {}, t.apiKey);
    expect((await h.gql(MY_ORGS, {}, t.apiKey)).status).toBe(429);
    await h.owner.query("update app_public.rate_limit_windows set window_start = now() - interval '61 minutes' where api_key_id = $1", [t.apiKeyId]);
    const res = await h.gql(MY_ORGS, {}, t.apiKey);
    expect(res.status).toBe(200);
    expect(res.headers["x-ratelimit-remaining"]).toBe(String(QUOTA - 1));
  });

  it("never limits JWT requests and sends them no rate-limit headers", async () => {
    const t = await createTenant(h);
    for (let i = 0; i < QUOTA * 3; i++) {
      const res = await h.gql(MY_ORGS, {}, t.ownerJwt);
      expect(res.status).toBe(200);
      expect(res.headers["x-ratelimit-limit"]).toBeUndefined();
    }
  });
});

describe("counting is atomic and shared", () => {
  let big: Harness;
  beforeAll(async () => { big = await startHarness({ rateLimitPerHour: 1000 }); });
  afterAll(() => big?.close());

  it("50 concurrent requests consume exactly 50, each seeing its own remaining count", async () => {
    const t = await createTenant(big);
    const responses = await Promise.all(Array.from({ length: 50 }, () => big.gql(MY_ORGS, {}, t.apiKey)));
    expect(responses.every((r) => r.status === 200)).toBe(true);
    const remaining = responses.map((r) => Number(r.headers["x-ratelimit-remaining"])).sort((x, y) => x - y);
    expect(remaining).toEqual(Array.from({ length: 50 }, (_, i) => 950 + i));
    const { rows } = await big.owner.query("select request_count from app_public.rate_limit_windows where api_key_id = $1", [t.apiKeyId]);
    expect(rows[0].request_count).toBe(50);
  });

  it("two servers on one database share one quota", async () => {
    const t = await createTenant(h);
    const second = await h.secondApp();
    const results: number[] = [];
    for (let i = 0; i < QUOTA + 2; i++) {
      const app = i % 2 === 0 ? h.handle.app : second.app;
      const res = await request(app).post("/graphql").set("Authorization", t.apiKey).set("Content-Type", "application/json")
        .send(JSON.stringify({ query: MY_ORGS }));
      results.push(res.status);
    }
    expect(results).toEqual([200, 200, 200, 200, 200, 429, 429]);
    expect(dataOf(await h.gql(MY_ORGS, {}, t.ownerJwt), "myOrganizations")).toHaveLength(1);
  });
});
