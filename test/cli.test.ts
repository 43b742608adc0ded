import jwt from "jsonwebtoken";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { runCli } from "./helpers/cli.js";
import { startHarness, type Harness } from "./helpers/harness.js";

let h: Harness;
beforeAll(async () => { h = await startHarness(); });
afterAll(() => h?.close());

const cli = (...args: string[]) => runCli(h.databaseUrl, ...args);

const count = async (table: string) => (await h.owner.query(`select count(*)::int as n from ${table}`)).rows[0].n;

describe("operator CLI", () => {
  it("creates an organization, a user, a membership, an API key and a JWT, each printing one JSON object", async () => {
    const org = await cli("create_organization", "--name", "Cli Co", "--currency", "USD", "--json");
    expect(org).toMatchObject({ code: 0, json: { name: "Cli Co", currency: "USD" } });
    const user = await cli("create_user", "--email", "Op@Cli.test", "--name", "Op", "--json");
    expect(user).toMatchObject({ code: 0, json: { email: "op@cli.test", name: "Op" } });
    const member = await cli("add_member", "--org-name", "cli co", "--email", "op@cli.test", "--role", "owner", "--json");
    expect(member).toMatchObject({ code: 0, json: { organizationId: org.json.id, userId: user.json.id, role: "owner" } });
    const key = await cli("create_api_key", "--org-name", "Cli Co", "--label", "books", "--json");
    expect(key.code).toBe(0);
    expect(key.json.secret).toMatch(/^acct_[0-9A-Za-z]{40}$/);
    const res = await h.gql("{ myOrganizations { name } }", {}, `Bearer ${key.json.secret}`);
    expect(res.body.data.myOrganizations).toEqual([{ name: "Cli Co" }]);

    const token = await cli("issue_jwt", "--email", "op@cli.test", "--expires-in", "30m", "--json");
    expect(token.code).toBe(0);
    const claims = jwt.verify(token.json.token, h.config.jwtSecret) as jwt.JwtPayload;
    expect(claims.sub).toBe(user.json.id);
    expect(claims.exp! - claims.iat!).toBe(1800);

    const revoked = await cli("revoke_api_key", "--org-name", "Cli Co", "--key-id", key.json.id, "--json");
    expect(revoked).toMatchObject({ code: 0, json: { id: key.json.id } });
    expect((await h.gql("{ myOrganizations { name } }", {}, `Bearer ${key.json.secret}`)).body.errors[0].message).toBe("Invalid API Key.");
  });

  it("an unknown organization name is a clear error, exit code 1, and nothing is written", async () => {
    const before = await count("app_public.api_keys");
    const r = await cli("create_api_key", "--org-name", "No Such Org", "--json");
    expect(r).toMatchObject({ code: 1, json: { error: 'No organization named "No Such Org".' } });
    const plain = await cli("add_member", "--org-name", "No Such Org", "--email", "x@y.test", "--role", "member");
    expect(plain.code).toBe(1);
    expect(plain.stderr).toContain('No organization named "No Such Org".');
    expect(await count("app_public.api_keys")).toBe(before);
  });

  it("refuses bad input with exit code 1: duplicate names, missing options, unknown commands", async () => {
    await cli("create_organization", "--name", "Twice");
    expect((await cli("create_organization", "--name", "TWICE", "--json")).json).toEqual({ error: "An organization with this name already exists." });
    expect(await cli("create_user", "--json")).toMatchObject({ code: 1, json: { error: "--email is required." } });
    expect((await cli("frobnicate")).code).toBe(1);
    expect((await cli("create_user", "--email", "a@b.test", "--bogus")).code).toBe(1);
  });
});
