import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { createTenant, startHarness, type Harness } from "./helpers/harness.js";

/**
 * A duplicate that arrives while the first is still uncommitted is caught by the unique index and
 * answered with the same message as a sequential duplicate (no "Internal error.").
 */
let h: Harness;
beforeAll(async () => { h = await startHarness(); });
afterAll(() => h?.close());

async function race(first: [string, unknown[]], second: [string, unknown[]]) {
  const a = await h.owner.connect();
  const b = await h.owner.connect();
  try {
    await a.query("begin");
    await a.query(first[0], first[1]);
    const pending = b.query(second[0], second[1]).then(() => null, (e: Error & { code?: string }) => e);
    await new Promise((r) => setTimeout(r, 200)); // b now waits on a's uncommitted index entry
    await a.query("commit");
    return await pending;
  } finally {
    a.release();
    b.release();
  }
}

describe("unique races", () => {
  it("two organizations with one name", async () => {
    const err = await race(["select app_private.create_organization('Race Co')", []], ["select app_private.create_organization('RACE CO')", []]);
    expect(err).toMatchObject({ code: "AP400", message: "An organization with this name already exists." });
  });

  it("two users with one email", async () => {
    const err = await race(["select app_private.create_user('race@example.test')", []], ["select app_private.create_user('Race@Example.test')", []]);
    expect(err).toMatchObject({ code: "AP400", message: "A user with this email already exists." });
  });

  it("one user added twice to an organization", async () => {
    const t = await createTenant(h);
    await h.owner.query("select app_private.create_user('twice@example.test')");
    const add: [string, unknown[]] = ["select app_private.add_member($1, 'twice@example.test', 'member')", [t.organizationId]];
    const err = await race(add, add);
    expect(err).toMatchObject({ code: "AP400", message: "User is already a member of this organization." });
  });
});
