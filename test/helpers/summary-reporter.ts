import type { Reporter, TestModule } from "vitest/node";

/** Ends the run with one plain line, `N passed, N failed[, N skipped]`, that any CI can read. */
export default class SummaryReporter implements Reporter {
  onTestRunEnd(modules: ReadonlyArray<TestModule>, unhandledErrors: ReadonlyArray<unknown>) {
    let passed = 0;
    let failed = unhandledErrors.length;
    let skipped = 0;
    for (const m of modules) {
      let moduleFailed = 0;
      for (const t of m.children.allTests()) {
        const state = t.result().state;
        if (state === "passed") passed++;
        else if (state === "failed") moduleFailed++;
        else skipped++;
      }
      // A file that failed to load or whose hooks failed counts as one failure.
      if (moduleFailed === 0 && m.state() === "failed") moduleFailed = 1;
      failed += moduleFailed;
    }
    console.log(`\n${passed} passed, ${failed} failed${skipped ? `, ${skipped} skipped` : ""}`);
  }
}
