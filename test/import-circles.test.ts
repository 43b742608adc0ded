import { parseCircular, parseDependencyTree } from "dpdm";
import { describe, expect, it } from "vitest";

/**
 * No module imports itself through others, type imports included: a circle makes the order in
 * which modules load matter (a value read before its module has run is undefined), and it is the
 * sign of two files each holding half of one job.
 */
describe("imports", () => {
  it("form no circle from any entry point (server, worker, CLI, scripts, benchmarks)", async () => {
    const tree = await parseDependencyTree(["src/main.ts", "worker/main.ts", "src/cli/main.ts", "scripts/*.ts", "bench/main.ts"], {
      context: process.cwd(), tsconfig: "tsconfig.json", transform: false, skipDynamicImports: false,
    });
    expect(Object.keys(tree).length).toBeGreaterThan(100);
    expect(parseCircular(tree)).toEqual([]);
  });
});
