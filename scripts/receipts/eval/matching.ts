/**
 * Matching over the corpus, in a database with the migrations applied: the bank events and the
 * receipts are written as the service would hold them (receipts fed the EXTRACTED fields through
 * app_private.record_receipt_extraction), then app_private.match_receipts links them. The candidates
 * are read before matching so that other thresholds can be tried in TypeScript (decide(): the same
 * rule and order as match_receipts) without touching the SQL.
 */
import { createHash } from "node:crypto";
import type pg from "pg";
import type { Corpus, CorpusReceipt, Scenario } from "../corpus.ts";

/** What matching needs of a receipt's extraction. */
export interface ExtractedFields {
  vendorName: string | null;
  amount: string | null;
  currency: string | null;
  dateReadings: string[];
  vendorConfidence?: string | null;
  amountConfidence?: string | null;
  dateConfidence?: string | null;
  text?: string;
  method?: string;
}

export interface MatchInput {
  receipt: CorpusReceipt;
  extraction: ExtractedFields;
  /** The file's size and SHA-256, when known (else made up from the seed and file name). */
  size?: number;
  sha256?: string;
}

export interface Candidate {
  eventId: string;
  similarity: number;
  dayDistance: number;
  transactionDate: string;
}

export interface Loaded {
  /** Currency → organization id. */
  orgs: Map<string, string>;
  /** Corpus event id ↔ database id. */
  eventUuid: Map<string, string>;
  eventCorpusId: Map<string, string>;
  /** Corpus receipt id → database id. */
  receiptUuid: Map<string, string>;
  /** Per organization, its receipts (database ids) in match_receipts' order, with their candidates
   * and the fields read with low confidence (a link then asks more: receipt_match_strict_thresholds). */
  queues: { org: string; receipts: { uuid: string; corpusId: string; candidates: Candidate[]; lowConfidence: string[] }[] }[];
  /** What a link asks of such a receipt. */
  strict: { minSimilarity: number; maxDayDistance: number };
}

export interface LoadOptions {
  /** Organization name prefix (names are unique server-wide in a database). */
  name: string;
  /** The main organization's functional currency (default CAD). */
  currency?: string;
  /**
   * Receipts that state another currency than the main organization's (a USD invoice in a CAD
   * business), and the bank events made for them, go into an organization of that currency: the
   * candidates need the receipt's stated currency to be the event's (receipt_candidates), and the
   * corpus gives such a receipt a bank event of the same amount. Off: everything in one organization
   * (those receipts then cannot be linked, by design).
   */
  splitCurrencies?: boolean;
}

/** Real comparisons as PostgreSQL makes them (similarity and thresholds are `real`). */
const f32 = Math.fround;

/** match_receipts' rule: the best candidate (similarity desc, day distance, date, id) is linked
 * when its similarity reaches minSimilarity and it leads the runner-up by minLead; a receipt with a
 * low amount or date needs strict.minSimilarity, one with a low vendor the event within
 * strict.maxDayDistance days (receipt_match_strict_thresholds). */
export function decide(
  candidates: Candidate[], minSimilarity: number, minLead: number,
  lowConfidence: string[] = [], strict?: { minSimilarity: number; maxDayDistance: number },
): string | null {
  const asksNearerName = strict && lowConfidence.some((f) => f === "amount" || f === "date");
  const maxDayDistance = strict && lowConfidence.includes("vendor") ? strict.maxDayDistance : Infinity;
  if (asksNearerName) minSimilarity = Math.max(minSimilarity, strict.minSimilarity);
  const sorted = [...candidates].sort(
    (a, b) => b.similarity - a.similarity || a.dayDistance - b.dayDistance || cmp(a.transactionDate, b.transactionDate) || cmp(a.eventId, b.eventId),
  );
  const best = sorted[0];
  if (!best) return null;
  const runnerUp = sorted.find((c) => c.eventId !== best.eventId);
  if (!(f32(best.similarity) >= f32(minSimilarity))) return null;
  if (best.dayDistance > maxDayDistance) return null;
  if (runnerUp && !(f32(f32(best.similarity) - f32(runnerUp.similarity)) >= f32(minLead))) return null;
  return best.eventId;
}

const cmp = (a: string, b: string) => (a < b ? -1 : a > b ? 1 : 0);

/** Writes the organizations, bank events and receipts, records the extractions, reads the candidates. */
export async function loadForMatching(db: pg.Pool, corpus: Corpus, inputs: MatchInput[], opts: LoadOptions): Promise<Loaded> {
  const main = opts.currency ?? "CAD";
  const currencyOf = (r: CorpusReceipt) => (opts.splitCurrencies && r.truth.currency ? r.truth.currency : main);
  const receiptById = new Map(corpus.receipts.map((r) => [r.id, r]));
  const eventCurrency = (e: Corpus["bankEvents"][number]) => {
    const r = e.forReceipt ? receiptById.get(e.forReceipt) : undefined;
    return r ? currencyOf(r) : main;
  };
  const currencies = [...new Set([main, ...inputs.map((i) => currencyOf(i.receipt)), ...corpus.bankEvents.map(eventCurrency)])];
  const orgs = new Map<string, string>();
  for (const cur of currencies) {
    const { rows } = await db.query<{ id: string }>("select id from app_private.create_organization($1, $2)", [`${opts.name} ${cur}`, cur]);
    orgs.set(cur, rows[0]!.id);
  }

  // The bank events, set-based: the corpus id kept in the memo.
  const events = corpus.bankEvents;
  const { rows: eventRows } = await db.query<{ id: string; memo: string }>(
    `insert into app_public.ledger_events (organization_id, event_type, direction, merchant_name, functional_amount,
         functional_currency, transaction_date, status, memo)
       select o.id, 'expense', 'out', u.merchant, u.amount, o.functional_currency, u.day, 'needs_review', u.corpus_id
         from unnest($1::uuid[], $2::text[], $3::numeric[], $4::date[], $5::text[]) as u(org, merchant, amount, day, corpus_id)
         join app_public.organizations o on o.id = u.org
       returning id, memo`,
    [events.map((e) => orgs.get(eventCurrency(e))), events.map((e) => e.merchantName), events.map((e) => e.amount), events.map((e) => e.date), events.map((e) => e.id)],
  );
  const eventUuid = new Map(eventRows.map((r) => [r.memo, r.id]));
  const eventCorpusId = new Map(eventRows.map((r) => [r.id, r.memo]));

  // The receipts, then their extractions recorded as the extraction job records them.
  const seedTag = `seed-${corpus.seed}`;
  const sha = (i: MatchInput) => i.sha256 ?? createHash("sha256").update(`${seedTag}/${i.receipt.file}`).digest("hex");
  const { rows: receiptRows } = await db.query<{ id: string; filename: string }>(
    `insert into app_public.receipts (organization_id, source, object_key, filename, content_type, size, sha256)
       select u.org, 'web_upload', u.org::text || '/receipts/eval/' || u.filename, u.filename, u.content_type, u.size, u.sha256
         from unnest($1::uuid[], $2::text[], $3::text[], $4::bigint[], $5::text[]) with ordinality as u(org, filename, content_type, size, sha256, n)
        order by u.n
       returning id, filename`,
    [inputs.map((i) => orgs.get(currencyOf(i.receipt))), inputs.map((i) => i.receipt.file), inputs.map((i) => i.receipt.contentType),
      inputs.map((i) => i.size ?? 0), inputs.map(sha)],
  );
  const byFile = new Map(inputs.map((i) => [i.receipt.file, i.receipt.id]));
  const receiptUuid = new Map(receiptRows.map((r) => [byFile.get(r.filename)!, r.id]));
  await db.query(
    "select app_private.record_receipt_extraction(u.id, u.x) from unnest($1::uuid[], $2::jsonb[]) as u(id, x)",
    [inputs.map((i) => receiptUuid.get(i.receipt.id)), inputs.map((i) => JSON.stringify({
      vendorName: i.extraction.vendorName, amount: i.extraction.amount, currency: i.extraction.currency,
      dateReadings: i.extraction.dateReadings, text: i.extraction.text ?? "", method: i.extraction.method ?? "text",
      vendorConfidence: i.extraction.vendorConfidence, amountConfidence: i.extraction.amountConfidence, dateConfidence: i.extraction.dateConfidence,
    }))],
  );

  // Each organization's waiting receipts in match_receipts' order, and their candidates (read
  // before any link: a linked event leaves the others' candidates, which decide-time emulates).
  const corpusIdOf = new Map([...receiptUuid].map(([c, u]) => [u, c]));
  const queues: Loaded["queues"] = [];
  const client = await db.connect();
  try {
    for (const org of orgs.values()) {
      await client.query("begin");
      await client.query("select app_private.scope_organization($1)", [org]);
      const { rows } = await client.query<{ receipt_id: string; low_confidence: string[]; event_id: string | null; similarity: string | null; day_distance: number | null; transaction_date: string | null }>(
        `select r.id receipt_id, r.low_confidence, c.event_id, c.similarity::text, c.day_distance, to_char(c.transaction_date, 'YYYY-MM-DD') transaction_date
           from (select x.id, x.uploaded_at, app_private.receipt_low_confidence_fields(x) low_confidence from app_public.receipts x
                  where x.organization_id = $1 and x.status = 'processed' and x.event_id is null) r
           left join lateral app_private.receipt_candidates(r.id) c on true
          order by r.uploaded_at, r.id, c.similarity desc, c.day_distance, c.transaction_date, c.event_id`,
        [org],
      );
      await client.query("commit");
      const list: Loaded["queues"][number]["receipts"] = [];
      for (const row of rows) {
        let last = list[list.length - 1];
        if (!last || last.uuid !== row.receipt_id) {
          list.push((last = { uuid: row.receipt_id, corpusId: corpusIdOf.get(row.receipt_id)!, candidates: [], lowConfidence: row.low_confidence }));
        }
        if (row.event_id) last.candidates.push({ eventId: row.event_id, similarity: Number(row.similarity), dayDistance: row.day_distance!, transactionDate: row.transaction_date! });
      }
      queues.push({ org, receipts: list });
    }
  } catch (e) {
    await client.query("rollback").catch(() => undefined);
    throw e;
  } finally {
    client.release();
  }
  const { rows: [strict] } = await db.query<{ s: number; d: number }>("select min_similarity s, max_day_distance d from app_private.receipt_match_strict_thresholds()");
  return { orgs, eventUuid, eventCorpusId, receiptUuid, queues, strict: { minSimilarity: strict!.s, maxDayDistance: strict!.d } };
}

/** The links match_receipts would make with these thresholds: receipts in its order, an event
 * linked once leaving the later receipts' candidates. Corpus receipt id → corpus event id. */
export function simulate(loaded: Loaded, minSimilarity: number, minLead: number): Map<string, string | null> {
  const links = new Map<string, string | null>();
  for (const q of loaded.queues) {
    const taken = new Set<string>();
    for (const r of q.receipts) {
      const event = decide(r.candidates.filter((c) => !taken.has(c.eventId)), minSimilarity, minLead, r.lowConfidence, loaded.strict);
      if (event) taken.add(event);
      links.set(r.corpusId, event ? loaded.eventCorpusId.get(event)! : null);
    }
  }
  return links;
}

/** Runs the real app_private.match_receipts for every organization; returns its links. */
export async function runMatching(db: pg.Pool, loaded: Loaded): Promise<Map<string, string | null>> {
  for (const org of loaded.orgs.values()) await db.query("select app_private.match_receipts($1)", [org]);
  const { rows } = await db.query<{ id: string; event_id: string | null }>(
    "select id, event_id from app_public.receipts where id = any ($1::uuid[])", [[...loaded.receiptUuid.values()]]);
  const corpusIdOf = new Map([...loaded.receiptUuid].map(([c, u]) => [u, c]));
  return new Map(rows.map((r) => [corpusIdOf.get(r.id)!, r.event_id ? loaded.eventCorpusId.get(r.event_id)! : null]));
}

export async function currentThresholds(db: pg.Pool): Promise<{ minSimilarity: number; minLead: number }> {
  const { rows } = await db.query<{ s: number; l: number }>("select min_similarity s, min_lead l from app_private.receipt_match_thresholds()");
  return { minSimilarity: rows[0]!.s, minLead: rows[0]!.l };
}

export interface MatchScore {
  receipts: number;
  shouldLink: number;
  links: number;
  correct: number;
  wrong: number;
  precision: number;
  recall: number;
}

export function scoreLinks(receipts: CorpusReceipt[], links: Map<string, string | null>): MatchScore {
  let shouldLink = 0, linkCount = 0, correct = 0;
  for (const r of receipts) {
    const got = links.get(r.id) ?? null;
    if (r.matchEventId) shouldLink++;
    if (got) {
      linkCount++;
      if (got === r.matchEventId) correct++;
    }
  }
  return {
    receipts: receipts.length, shouldLink, links: linkCount, correct, wrong: linkCount - correct,
    precision: linkCount === 0 ? 1 : correct / linkCount, recall: shouldLink === 0 ? 1 : correct / shouldLink,
  };
}

export const SCENARIOS: Scenario[] = ["match", "match+far", "match+other", "twin", "far-only", "other-only", "none"];

export function scoreByScenario(receipts: CorpusReceipt[], links: Map<string, string | null>): { scenario: Scenario; score: MatchScore }[] {
  return SCENARIOS.map((scenario) => ({ scenario, score: scoreLinks(receipts.filter((r) => r.scenario === scenario), links) }))
    .filter((s) => s.score.receipts > 0);
}
