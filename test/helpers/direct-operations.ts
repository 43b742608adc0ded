import { expect } from "vitest";
import { loadConfig } from "../../src/config.js";

/**
 * The same document, which the direct path leaves to GraphQL execution: `@include(if: true)` on
 * the root field `field` (a directive is never compiled into a direct operation).
 */
export function byExecution(query: string, field: string): string {
  const end = query.indexOf(") {", query.indexOf(field + "("));
  return `${query.slice(0, end + 1)} @include(if: true)${query.slice(end + 1)}`;
}

/** A direct path's switch: on unless `variable=off`, and any other value refused by name. */
export function expectOnUnlessOff(variable: string, key: "directReads" | "directWrites", refused: string) {
  expect(loadConfig({})[key]).toBe(true);
  expect(loadConfig({ [variable]: "off" })[key]).toBe(false);
  expect(() => loadConfig({ [variable]: refused })).toThrow(`${variable} must be "on" or "off", got "${refused}".`);
}

