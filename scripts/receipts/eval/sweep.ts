/**
 * A grid of matching thresholds, each decided in TypeScript from the candidates read before matching
 * (simulate(): match_receipts' rule and order), and a suggested pair: 100% precision, the best recall
 * reached with it, and as far from the precision cliff as the grid allows.
 */
import type { CorpusReceipt } from "../corpus.ts";
import { scoreLinks, simulate, type Loaded, type MatchScore } from "./matching.ts";

const steps = (from: number, to: number, step: number) =>
  Array.from({ length: Math.round((to - from) / step) + 1 }, (_, i) => Math.round((from + i * step) * 100) / 100);

export const SIMILARITIES = steps(0.2, 0.6, 0.05);
export const LEADS = steps(0, 0.3, 0.05);

export interface SweepResult {
  /** cells[i][j]: SIMILARITIES[i], LEADS[j]. */
  cells: MatchScore[][];
  bestRecall: number;
  /** Cells with 100% precision and the best recall. */
  plateau: [number, number][];
  /** The suggested cell and its distance (grid steps) to the nearest cell below 100% precision / off the plateau. */
  suggestion: { i: number; j: number; cliff: number; edge: number } | null;
  /** Where the true links and the rest sit: the gap any pair of thresholds must fall in. */
  gaps: { trueMinSimilarity: number | null; trueMinLead: number | null; falseMaxSimilarity: number | null; falseMaxLeadAtSimilarity: { similarity: number; lead: number }[] };
}

export function sweep(receipts: CorpusReceipt[], loaded: Loaded): SweepResult {
  const cells = SIMILARITIES.map((s) => LEADS.map((l) => scoreLinks(receipts, simulate(loaded, s, l))));
  const perfect = cells.flat().filter((c) => c.precision === 1);
  const bestRecall = perfect.length ? Math.max(...perfect.map((c) => c.recall)) : 0;
  const plateau: [number, number][] = [];
  cells.forEach((row, i) => row.forEach((c, j) => { if (c.precision === 1 && c.recall === bestRecall) plateau.push([i, j]); }));
  // Grid steps to the nearest cell that is `bad`; beyond the grid is unknown, so it counts as bad
  // one step past the border (a cell on the grid's border is on the edge of what was measured).
  const distanceTo = (i: number, j: number, bad: (c: MatchScore) => boolean) => {
    let d = Math.min(i + 1, SIMILARITIES.length - i, j + 1, LEADS.length - j);
    cells.forEach((row, a) => row.forEach((c, b) => { if (bad(c)) d = Math.min(d, Math.max(Math.abs(a - i), Math.abs(b - j))); }));
    return d;
  };
  const ci = plateau.reduce((s, [i]) => s + i, 0) / Math.max(plateau.length, 1);
  const cj = plateau.reduce((s, [, j]) => s + j, 0) / Math.max(plateau.length, 1);
  let suggestion: SweepResult["suggestion"] = null;
  for (const [i, j] of plateau) {
    const cliff = distanceTo(i, j, (c) => c.precision < 1);
    const edge = distanceTo(i, j, (c) => !(c.precision === 1 && c.recall === bestRecall));
    const better = !suggestion || cliff > suggestion.cliff || (cliff === suggestion.cliff && (edge > suggestion.edge ||
      (edge === suggestion.edge && Math.hypot(i - ci, j - cj) < Math.hypot(suggestion.i - ci, suggestion.j - cj))));
    if (better) suggestion = { i, j, cliff, edge };
  }

  // The true event's similarity and lead when it is a receipt's best candidate; the best wrong
  // candidate's similarity (and lead) otherwise.
  let trueMinSimilarity: number | null = null, trueMinLead: number | null = null, falseMaxSimilarity: number | null = null;
  const falsePoints: { similarity: number; lead: number }[] = [];
  const want = new Map(receipts.map((r) => [r.id, r.matchEventId]));
  for (const q of loaded.queues) {
    for (const r of q.receipts) {
      const [best, second] = r.candidates;
      if (!best) continue;
      // No runner-up: any lead passes.
      const lead = second ? best.similarity - second.similarity : Infinity;
      if (loaded.eventCorpusId.get(best.eventId) === want.get(r.corpusId)) {
        trueMinSimilarity = Math.min(trueMinSimilarity ?? 1, best.similarity);
        trueMinLead = Math.min(trueMinLead ?? Infinity, lead);
      } else {
        falseMaxSimilarity = Math.max(falseMaxSimilarity ?? 0, best.similarity);
        falsePoints.push({ similarity: best.similarity, lead });
      }
    }
  }
  falsePoints.sort((a, b) => b.similarity - a.similarity || b.lead - a.lead);
  return { cells, bestRecall, plateau, suggestion, gaps: { trueMinSimilarity, trueMinLead, falseMaxSimilarity, falseMaxLeadAtSimilarity: falsePoints } };
}

const p0 = (x: number) => (x === 1 ? "100" : (100 * x).toFixed(1));

/** Prints the grid; returns the summary lines. */
export function printSweep(result: SweepResult, current: { minSimilarity: number; minLead: number }): string[] {
  console.log("\n## Threshold sweep (precision/recall %, decided from the candidates; * = 100% precision with the best recall, > = suggested)\n");
  console.log(`${"sim \\ lead".padEnd(10)} ${LEADS.map((l) => l.toFixed(2).padStart(12)).join("")}`);
  result.cells.forEach((row, i) => {
    const cells = row.map((c, j) => {
      const mark = result.suggestion?.i === i && result.suggestion.j === j ? ">" : result.plateau.some(([a, b]) => a === i && b === j) ? "*" : " ";
      return `${mark}${p0(c.precision)}/${p0(c.recall)}`.padStart(12);
    });
    console.log(`${SIMILARITIES[i]!.toFixed(2).padEnd(10)} ${cells.join("")}`);
  });
  const g = result.gaps;
  const f3 = (x: number | null) => (x === null ? "–" : x === Infinity ? "∞ (no runner-up)" : x.toFixed(3));
  console.log(`\ntrue links (best candidate right): similarity ≥ ${f3(g.trueMinSimilarity)}, lead ≥ ${f3(g.trueMinLead)}`);
  console.log(`best candidate wrong (or none should be linked): similarity ≤ ${f3(g.falseMaxSimilarity)}; highest: ${g.falseMaxLeadAtSimilarity.slice(0, 8).map((p) => `${f3(p.similarity)}/lead ${f3(p.lead)}`).join(", ") || "–"}`);
  const s = result.suggestion;
  const lines: string[] = [];
  if (s) {
    const plateauSims = [...new Set(result.plateau.map(([i]) => SIMILARITIES[i]!))];
    const plateauLeads = [...new Set(result.plateau.map(([, j]) => LEADS[j]!))];
    lines.push(`sweep: 100% precision reaches recall ${p0(result.bestRecall)}% on ${result.plateau.length} of ${SIMILARITIES.length * LEADS.length} cells ` +
      `(min_similarity ${Math.min(...plateauSims).toFixed(2)}–${Math.max(...plateauSims).toFixed(2)}, min_lead ${Math.min(...plateauLeads).toFixed(2)}–${Math.max(...plateauLeads).toFixed(2)}); ` +
      `suggested min_similarity ${SIMILARITIES[s.i]!.toFixed(2)}, min_lead ${LEADS[s.j]!.toFixed(2)} (${s.cliff} step(s) from a cell below 100% precision or the grid's border, ${s.edge} from the plateau's edge); current ${current.minSimilarity}/${current.minLead}`);
  } else lines.push("sweep: no cell reaches 100% precision");
  const falseAlone = g.falseMaxLeadAtSimilarity.filter((p) => p.lead === Infinity);
  const falseWithRunnerUp = g.falseMaxLeadAtSimilarity.filter((p) => p.lead !== Infinity);
  lines.push(`  true links: similarity ≥ ${f3(g.trueMinSimilarity)}, lead ≥ ${f3(g.trueMinLead)}; wrong best candidates: ` +
    `${falseWithRunnerUp.length ? `lead ≤ ${f3(Math.max(...falseWithRunnerUp.map((p) => p.lead)))} when there is a runner-up` : "none with a runner-up"}, ` +
    `${falseAlone.length ? `similarity ≤ ${f3(Math.max(...falseAlone.map((p) => p.similarity)))} when alone` : "none alone"}`);
  return lines;
}
