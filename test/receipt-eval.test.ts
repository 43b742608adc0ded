// A slice of `npm run eval:receipts`: a small seeded corpus, its text and PDF receipts extracted
// (no OCR: fast), matched by app_private.match_receipts in the test database. Never a wrong link;
// every receipt that should be linked and was read right is linked to its event.
import { mkdtemp, rm } from "node:fs/promises";
import os from "node:os";
import path from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { generateCorpus, type Corpus } from "../scripts/receipts/corpus.ts";
import { extractCorpus, type Extracted } from "../scripts/receipts/eval/extraction.ts";
import { currentThresholds, loadForMatching, runMatching, scoreLinks, simulate } from "../scripts/receipts/eval/matching.ts";
import { startHarness, type Harness } from "./helpers/harness.js";

let h: Harness;
let dir: string;
let corpus: Corpus;
let items: Extracted[];

beforeAll(async () => {
  dir = await mkdtemp(path.join(os.tmpdir(), "receipt-eval-test-"));
  [h, corpus] = await Promise.all([startHarness(), generateCorpus({ seed: 5, receipts: 20, outDir: dir })]);
  items = await extractCorpus(corpus.receipts.filter((r) => r.kind !== "png"), dir);
}, 90_000);

afterAll(async () => {
  await h?.close();
  if (dir) await rm(dir, { recursive: true, force: true });
});

describe("receipt evaluation (text and PDF receipts of a small corpus)", () => {
  it("links without a wrong link, every matchable receipt read right included", async () => {
    expect(items.length).toBeGreaterThanOrEqual(8);
    const loaded = await loadForMatching(h.owner, corpus, items.map((it) => ({ receipt: it.receipt, extraction: it.extraction, size: it.size, sha256: it.sha256 })),
      { name: "Eval Slice", splitCurrencies: true });
    const thresholds = await currentThresholds(h.owner);
    const simulated = simulate(loaded, thresholds.minSimilarity, thresholds.minLead);
    const links = await runMatching(h.owner, loaded);

    const receipts = items.map((it) => it.receipt);
    const score = scoreLinks(receipts, links);
    expect(score.wrong).toBe(0);
    expect(score.precision).toBe(1);
    const readRight = items.filter((it) => it.receipt.matchEventId && it.correct.amount && it.correct.date && it.correct.vendor && it.correct.currency);
    expect(readRight.length).toBeGreaterThan(0);
    expect(Object.fromEntries(readRight.map((it) => [it.receipt.id, links.get(it.receipt.id)])))
      .toEqual(Object.fromEntries(readRight.map((it) => [it.receipt.id, it.receipt.matchEventId])));
    // Receipts that should stay unlinked (twins, far or other-vendor decoys only, none) are.
    for (const r of receipts.filter((r) => !r.matchEventId)) expect(links.get(r.id) ?? null).toBeNull();
    // The sweep's TypeScript decision agrees with match_receipts at the current thresholds.
    expect(Object.fromEntries(simulated)).toEqual(Object.fromEntries(receipts.map((r) => [r.id, links.get(r.id) ?? null])));
  });
});
