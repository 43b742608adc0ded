import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { createUser, jwtFor, startHarness, type Harness } from "./helpers/harness.js";

/** A JWT session's X-Organization-Id header: the user is checked first, then the header. */
let h: Harness;
beforeAll(async () => {
  h = await startHarness();
});
afterAll(() => h?.close());

describe("X-Organization-Id check order", () => {
  it("an unknown user is an invalid token, whatever the header says", async () => {
    const res = await h.gql("{ myOrganizations { id } }", {}, jwtFor(h, "00000000-0000-4000-8000-000000000001"), { "X-Organization-Id": "nope" });
    expect(res.body.errors[0]).toEqual({ message: "Invalid Token.", extensions: { code: "UNAUTHENTICATED" } });
  });
  it("a malformed header names no organization", async () => {
    const userId = await createUser(h);
    const res = await h.gql("{ myOrganizations { id } }", {}, jwtFor(h, userId), { "X-Organization-Id": "nope" });
    expect(res.body.errors[0]).toEqual({ message: "Organization Not Found.", extensions: { code: "NOT_FOUND" } });
  });
});
