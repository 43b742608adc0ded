import { mkdtemp, readFile, readdir, rm } from "node:fs/promises";
import os from "node:os";
import path from "node:path";
import { extractText, getDocumentProxy } from "unpdf";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { generateCorpus, planCorpus, type Corpus } from "../scripts/receipts/corpus.ts";

const SEED = 42;
const N = 12;
const dirs: string[] = [];
let a: Corpus;
let dirA: string;
let dirB: string;

async function tmp(): Promise<string> {
  const d = await mkdtemp(path.join(os.tmpdir(), "receipt-corpus-test-"));
  dirs.push(d);
  return d;
}

const dayNum = (iso: string) => Math.round(Date.parse(`${iso}T00:00:00Z`) / 86_400_000);
const toCents = (s: string) => Math.round(Number(s.replace(/[$,]/g, "")) * 100);

/** Reads the labelled amounts off a receipt's text: SUBTOTAL, fees, taxes, tip, TOTAL. */
function parseTotals(text: string) {
  const out = { subtotal: [] as number[], fees: [] as number[], taxes: [] as number[], tip: [] as number[], total: [] as number[] };
  const re = /^\s*(sub-?total|total(?: [A-Z]{3})?|(?:gst\/hst|gst|hst|pst|qst|sales tax|meals tax)\b[^$\d]*(?:\d+(?:\.\d+)?%\)?)?|tip|gratuity|shipping|delivery fee|service fee)\s*:?\s+(\$?\d+\.\d\d)\s*$/i;
  for (const line of text.split("\n")) {
    const m = re.exec(line);
    if (!m) continue;
    const label = m[1]!.toLowerCase();
    const v = toCents(m[2]!);
    if (/^sub-?total/.test(label)) out.subtotal.push(v);
    else if (/^total/.test(label)) out.total.push(v);
    else if (/^(tip|gratuity)/.test(label)) out.tip.push(v);
    else if (/^(shipping|delivery fee|service fee)/.test(label)) out.fees.push(v);
    else out.taxes.push(v);
  }
  return out;
}

beforeAll(async () => {
  dirA = await tmp();
  dirB = await tmp();
  a = await generateCorpus({ seed: SEED, receipts: N, outDir: dirA });
  await generateCorpus({ seed: SEED, receipts: N, outDir: dirB });
}, 60_000);

afterAll(async () => {
  for (const d of dirs) await rm(d, { recursive: true, force: true });
});

describe("receipt corpus", () => {
  it("is deterministic for a seed and differs for another seed", async () => {
    const jsonA = await readFile(path.join(dirA, "corpus.json"), "utf8");
    const jsonB = await readFile(path.join(dirB, "corpus.json"), "utf8");
    expect(jsonB).toBe(jsonA);
    expect(JSON.parse(jsonA)).toEqual(a);
    // Text receipts and PDFs are byte-identical too (PNGs are with this sharp build, but that is libvips' business).
    for (const r of a.receipts.filter((r) => r.kind !== "png")) {
      expect((await readFile(path.join(dirB, r.file))).equals(await readFile(path.join(dirA, r.file)))).toBe(true);
    }
    const other = planCorpus({ seed: SEED + 1, receipts: N }).corpus;
    expect(JSON.stringify(other)).not.toBe(jsonA.trim());
    expect(other.receipts.map((r) => r.truth.amount)).not.toEqual(a.receipts.map((r) => r.truth.amount));
  });

  it("writes every file with the right magic bytes", async () => {
    expect(a.receipts).toHaveLength(N);
    const files = new Set(await readdir(dirA));
    expect(files.has("corpus.json")).toBe(true);
    const { plans } = planCorpus({ seed: SEED, receipts: N });
    for (const [i, r] of a.receipts.entries()) {
      expect(files.has(r.file)).toBe(true);
      const buf = await readFile(path.join(dirA, r.file));
      if (r.kind === "png") {
        expect(r.contentType).toBe("image/png");
        expect(buf.subarray(0, 8).equals(Buffer.from([0x89, 0x50, 0x4e, 0x47, 0x0d, 0x0a, 0x1a, 0x0a]))).toBe(true);
      } else if (r.kind === "pdf") {
        expect(r.contentType).toBe("application/pdf");
        expect(buf.subarray(0, 5).toString("latin1")).toBe("%PDF-");
        const { text } = await extractText(await getDocumentProxy(new Uint8Array(buf)), { mergePages: true });
        expect(text).toContain(r.truth.amount);
      } else {
        expect(r.contentType).toBe("text/plain");
        expect(buf.toString("utf8")).toBe(plans[i]!.text);
      }
    }
  });

  it("has amounts that add up, in integer cents and in the text", () => {
    const { plans } = planCorpus({ seed: SEED, receipts: 80 });
    for (const p of plans) {
      const m = p.money;
      expect(m.items.reduce((s, it) => s + it.amount, 0)).toBe(m.subtotal);
      const base = m.subtotal + m.fees.reduce((s, f) => s + f.cents, 0);
      for (const t of m.taxes) expect(t.cents).toBe(Math.round((base * t.rate) / 100_000));
      expect(base + m.taxes.reduce((s, t) => s + t.cents, 0) + m.tip).toBe(m.total);
      expect(toCents(p.receipt.truth.amount)).toBe(m.total);

      const got = parseTotals(p.text);
      expect(got.subtotal, `${p.receipt.id} subtotal\n${p.text}`).toEqual([m.subtotal]);
      expect(got.total, `${p.receipt.id} total\n${p.text}`).toEqual([m.total]);
      expect(got.taxes.length).toBe(m.taxes.length);
      const sum = got.subtotal[0]! + [...got.fees, ...got.taxes, ...got.tip].reduce((s, v) => s + v, 0);
      expect(sum, `${p.receipt.id}\n${p.text}`).toBe(got.total[0]);
      expect(p.text).toContain(p.dateText);
    }
  });

  it("has true matches and every kind of decoy", () => {
    for (const c of [a, planCorpus({ seed: 7, receipts: 80 }).corpus]) {
      const events = new Map(c.bankEvents.map((e) => [e.id, e]));
      const sameAmount = (amount: string) => c.bankEvents.filter((e) => e.amount === amount);
      const scenarios = new Set(c.receipts.map((r) => r.scenario));
      for (const s of ["match", "match+far", "match+other", "twin", "far-only", "other-only", "none"]) expect(scenarios.has(s as never)).toBe(true);
      expect(new Set(c.bankEvents.map((e) => e.id)).size).toBe(c.bankEvents.length);
      expect(new Set(c.receipts.map((r) => r.truth.amount)).size).toBe(c.receipts.length);
      for (const r of c.receipts) {
        const day = dayNum(r.truth.date);
        const same = sameAmount(r.truth.amount);
        const inWindow = same.filter((e) => dayNum(e.date) - day >= 0 && dayNum(e.date) - day <= 3);
        if (r.matchEventId) {
          const ev = events.get(r.matchEventId)!;
          expect(ev.amount).toBe(r.truth.amount);
          expect(dayNum(ev.date) - day).toBeGreaterThanOrEqual(0);
          expect(dayNum(ev.date) - day).toBeLessThanOrEqual(3);
          expect(ev.merchantName).toBe(ev.merchantName.toUpperCase());
          expect(ev.merchantName).not.toBe(r.truth.vendorName);
        }
        switch (r.scenario) {
          case "match":
            expect(same.map((e) => e.id)).toEqual([r.matchEventId]);
            break;
          case "match+far":
            expect(same).toHaveLength(2);
            expect(same.some((e) => Math.abs(dayNum(e.date) - day) >= 6)).toBe(true);
            break;
          case "match+other": {
            expect(same).toHaveLength(2);
            const decoy = same.find((e) => e.id !== r.matchEventId)!;
            expect(decoy.date).toBe(r.truth.date);
            expect(decoy.merchantName).not.toBe(events.get(r.matchEventId!)!.merchantName);
            break;
          }
          case "twin":
            expect(r.matchEventId).toBeNull();
            expect(inWindow).toHaveLength(2);
            expect(Math.abs(dayNum(inWindow[0]!.date) - dayNum(inWindow[1]!.date))).toBe(1);
            break;
          case "far-only":
            expect(r.matchEventId).toBeNull();
            expect(same).toHaveLength(1);
            expect(Math.abs(dayNum(same[0]!.date) - day)).toBeGreaterThanOrEqual(6);
            break;
          case "other-only":
            expect(r.matchEventId).toBeNull();
            expect(same).toHaveLength(1);
            expect(same[0]!.date).toBe(r.truth.date);
            break;
          case "none":
            expect(r.matchEventId).toBeNull();
            expect(same).toHaveLength(0);
            break;
        }
        if (r.truth.dateAmbiguous) {
          const [, mm, dd] = r.truth.date.split("-").map(Number);
          expect(mm! <= 12 && dd! <= 12 && mm !== dd).toBe(true);
          if (r.dateOrder === "auto") expect(r.matchEventId).not.toBeNull();
        } else {
          expect(r.dateOrder).toBe("auto");
        }
      }
    }
    const big = planCorpus({ seed: 7, receipts: 80 }).corpus;
    const kinds = big.receipts.reduce<Record<string, number>>((acc, r) => ((acc[r.kind] = (acc[r.kind] ?? 0) + 1), acc), {});
    expect(kinds).toEqual({ png: 36, pdf: 24, email: 20 });
    expect(big.receipts.filter((r) => r.matchEventId).length).toBe(60);
    const ambiguous = big.receipts.filter((r) => r.truth.dateAmbiguous);
    expect(ambiguous.some((r) => r.dateOrder === "auto")).toBe(true);
    expect(ambiguous.some((r) => r.dateOrder !== "auto")).toBe(true);
  });
});
