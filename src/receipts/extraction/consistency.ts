import { AFTER_ROUNDING, candidates, DISCOUNT, Label, ROUNDING, SUBTOTAL, TAX_OR_CHARGE, totalAmong, type Candidate } from "./total.js";

/**
 * How the receipt's total was settled:
 * - `checked`: the receipt's own arithmetic agrees with it (subtotal + tax ± rounding, cash −
 *   change, a card payment of the same amount);
 * - `labelled`: a total label names it and no arithmetic on the receipt contradicts or confirms it;
 * - `guessed`: neither: the largest amount that is not a payment.
 */
export type AmountConfidence = "checked" | "labelled" | "guessed";

export interface TotalReading {
  cents: number;
  line: number;
  confidence: AmountConfidence;
  /** Which checks agree ("subtotal + tax", "cash − change", "card payment"). */
  checks: string[];
}

type Role = "subtotal" | "tax" | "rounding" | "discount" | "cash" | "change" | "card" | "other";

/** What an amount's own words say it is (a total candidate is "other"). */
function roleOf(c: Candidate): Role {
  const w = c.words;
  if (c.part === "net") return "subtotal";
  if (c.part === "tax") return "tax";
  if (c.change) return "change";
  if (c.payment) return "cash";
  // A total before tax ("Total excl. GST") is a subtotal for the checks.
  if (SUBTOTAL.test(w) || /\b(excl\w*|exclusive|excluding|before tax|pre-?tax|net of tax)\b/.test(w)) return "subtotal";
  if (AFTER_ROUNDING.test(w)) return "other";
  if (ROUNDING.test(w)) return "rounding";
  if (DISCOUNT.test(w)) return "discount";
  // What is added to the subtotal: taxes, a service charge, a tip.
  if (c.label === Label.NOT_TOTAL && (TAX_OR_CHARGE.test(w) || /\b(tip|tips|gratuity)\b/.test(w))) return "tax";
  if (c.label === Label.WEAK && /\b(visa|mastercard|master|amex|debit|credit|card|eftpos)\b/.test(w)) return "card";
  return "other";
}

/** At most this many of each kind enter the sums: a long receipt's many tax lines would make the subsets explode. */
const MOST = 4;

function distinct(of: Candidate[]): Candidate[] {
  const seen = new Set<number>();
  return of.filter((c) => (seen.has(c.cents) ? false : (seen.add(c.cents), true))).slice(0, MOST);
}

/** Sums of every non-empty subset of the amounts (tax lines: GST and service charge, or two rates). */
function subsetSums(cents: number[]): number[] {
  const sums: number[] = [];
  for (let mask = 1; mask < 1 << cents.length; mask++) {
    let sum = 0;
    for (let k = 0; k < cents.length; k++) if (mask & (1 << k)) sum += cents[k];
    sums.push(sum);
  }
  return sums;
}

/** The checks the receipt's own arithmetic passes for a total of `cents` printed on `line` (a line never confirms itself). */
function checksFor(cents: number, line: number, byRole: Record<Role, Candidate[]>): string[] {
  const checks: string[] = [];
  const roundings = [0, ...byRole.rounding.map((c) => c.cents)];
  const discounts = [0, ...byRole.discount.map((c) => -Math.abs(c.cents))];
  const taxSums = subsetSums(byRole.tax.map((c) => c.cents));
  for (const s of byRole.subtotal) {
    const withTax = taxSums.some((t) => roundings.some((r) => discounts.some((d) => s.cents + t + r + d === cents)));
    const roundedOnly = roundings.some((r) => r !== 0 && s.cents + r === cents);
    if (withTax || roundedOnly) { checks.push(withTax ? "subtotal + tax" : "subtotal ± rounding"); break; }
  }
  const changes = byRole.change.map((c) => c.cents).filter((c) => c > 0);
  if (byRole.cash.some((cash) => changes.some((change) => cash.cents - change === cents))) checks.push("cash − change");
  if (byRole.card.some((card) => card.cents === cents && card.line !== line)) checks.push("card payment");
  return checks;
}

/**
 * The grand total read by consistency, not by position alone: the labelled total (findTotal) when
 * the receipt's arithmetic agrees with it or says nothing; another amount when the arithmetic
 * supports it and not the labelled one (a subtotal or a tax line taken for the total, an OCR
 * misreading such as 1,859.35 for 59.35); with its confidence.
 */
export function totalByConsistency(lines: string[]): TotalReading | null {
  const all = candidates(lines);
  const primary = totalAmong(all);
  const found = all.filter((c) => c.cents !== 0);
  const byRole: Record<Role, Candidate[]> = { subtotal: [], tax: [], rounding: [], discount: [], cash: [], change: [], card: [], other: [] };
  for (const c of found) byRole[roleOf(c)].push(c);
  for (const role of Object.keys(byRole) as Role[]) byRole[role] = distinct(byRole[role]);

  // A payment line (cash, change, a card's) is what was paid, never the total's own reading.
  const totals = found.filter((c) => roleOf(c) === "other");
  const primaryChecks = primary ? checksFor(primary.cents, primary.line, byRole) : [];
  if (primary && primaryChecks.length === 0) primaryChecks.push(...confirmsTheTotal(primary, found, byRole));
  if (primary && primaryChecks.length > 0) return { ...primary, confidence: "checked", checks: primaryChecks };
  // What was paid outranks a total nothing confirms, whatever its label (a total misread 623.60
  // or 10.00 where the cash less the change is 63.60 or 10.60): when the receipt prints that
  // amount elsewhere too, or its parts add up to it.
  const paid = paidAmount(all, found, byRole, primary);
  if (paid) return paid;
  // A total below the receipt's own parts is a misreading when an amount labelled a total or paid
  // reaches them (without one, the parts are the misreading: a subtotal read 1,859.35 for 59.35):
  // any amount the arithmetic supports replaces it, whatever its label (44.94 + 1.26 = 46.20 over a
  // "Total" misread 44.20).
  const floor = partsFloor(byRole);
  const reached = found.some((c) => c.cents >= floor && (c.label >= Label.TOTAL || ["cash", "card"].includes(roleOf(c))));
  // An amount due is exempt: a deposit, gift card, store credit or trade-in takes it below the parts.
  const belowParts = primary !== null && primary.cents > 0 && primary.cents < floor && reached && labelOf(found, primary) < Label.DUE;

  // "Amount due", "Total payable": what the customer pays, even where partial totals add up to something else (an adjustment note).
  const primaryLabel = primary && !belowParts ? labelOf(found, primary) : Label.NONE;
  // Another amount the arithmetic supports: the most checks, then the strongest label, then the later line.
  let best: TotalReading | null = null;
  let bestLabel: number = Label.NOT_TOTAL;
  for (const c of totals) {
    // Only a reading labelled at least as strongly replaces a labelled total (two OCR readings of "TOTAL", one
    // misread): a total with something added the checks do not know (a tip) stays.
    if (primaryLabel > Label.WEAK && c.label < primaryLabel) continue;
    const checks = checksFor(c.cents, c.line, byRole);
    if (checks.length === 0) continue;
    if (!best || checks.length > best.checks.length || (checks.length === best.checks.length && c.label > bestLabel)) {
      best = { cents: c.cents, line: c.line, confidence: "checked", checks };
      bestLabel = c.label;
    }
  }
  if (best) return best;
  // A photo's column of labels read apart from its column of amounts, one of them short, pairs
  // each label with its neighbour's amount ("Total 100.00" for the cash, "Cash 30.31" for the
  // change). The amounts still add up: one that is the sum of two others and the difference of two
  // others (subtotal + tax, cash − change) is the total, whatever the labels say. Trusted as a
  // labelled total is, not as a checked one: the labels disagree, and on the corpus' photographed
  // receipts it named a wrong amount too.
  const unlabelled = sumAndDifference(found);
  if (unlabelled && unlabelled.cents !== primary?.cents) {
    return { ...unlabelled, confidence: "labelled", checks: ["a sum of two amounts", "a difference of two amounts"] };
  }
  if (!primary) return null;
  if (belowParts) {
    // Without arithmetic: the strongest-labelled amount that clears the parts (another reading's
    // total); with none, a total under half the parts is no total at all (a rounding or change
    // amount, its label and amount paired askew in a photo), and one just under them stays (62.00
    // against a subtotal read 62.80: a digit misread on either side).
    const clearing = totalAmong(totals.filter((c) => c.cents >= floor && c.label >= Label.TOTAL));
    if (clearing) return { cents: clearing.cents, line: clearing.line, confidence: "labelled", checks: [] };
    if (primary.cents * 2 < floor) return null;
  }
  return { ...primary, confidence: labelOf(found, primary) >= Label.TOTAL ? "labelled" : "guessed", checks: [] };
}

/** The most a cash sale's total moves when it is rounded to the nearest 5 cents. */
const CASH_ROUNDING = 2;

/**
 * The amount paid, when the payment lines settle it and the receipt bears it out: cash less the
 * change given back, cash handed over with a change of nothing printed, or a card's payment. Paid
 * more than the total says, it is the total when the receipt prints it on a line that is no
 * payment (the total read short: 10.00 for 10.60); paid less, only when the receipt's parts add up
 * to it (the total read long: 623.60 for 63.60) — otherwise the rest was paid another way (a split
 * payment, a deposit, points, cash back). Null when the payments say nothing, disagree (two
 * readings, one misread), or stand alone, and for a refund (a negative total).
 */
function paidAmount(
  all: Candidate[],
  found: Candidate[],
  byRole: Record<Role, Candidate[]>,
  primary: { cents: number; line: number } | null,
): TotalReading | null {
  if (primary && primary.cents < 0) return null;
  const changes = byRole.change.map((c) => c.cents).filter((c) => c > 0);
  const noChange = changes.length === 0 && all.some((c) => c.change && c.cents === 0);
  // Each amount paid, with how it was paid and the payment's line.
  const readings = new Map<number, [string, number]>();
  for (const cash of byRole.cash) {
    for (const change of changes) if (cash.cents > change) readings.set(cash.cents - change, ["cash − change", cash.line]);
    if (noChange && cash.cents > 0) readings.set(cash.cents, ["cash, no change", cash.line]);
  }
  for (const card of byRole.card) if (card.cents > 0 && !readings.has(card.cents)) readings.set(card.cents, ["card payment", card.line]);
  const borne = [...readings].flatMap(([cents, [how, paidOn]]) => {
    const parts = checksFor(cents, -1, byRole).filter((check) => check.startsWith("subtotal"));
    if (primary && cents === primary.cents) return [{ ...primary, confidence: "checked" as const, checks: [how, ...parts] }];
    const printed = found.find((c) => c.cents === cents && !c.payment && roleOf(c) !== "card");
    // A cash sale's total rounded to the nearest 5 cents is paid up to 2 cents less.
    const paidLess = primary !== null && cents < primary.cents - CASH_ROUNDING;
    if (paidLess ? parts.length === 0 : !printed && parts.length === 0) return [];
    return [{ cents, line: printed?.line ?? paidOn, confidence: "checked" as const, checks: [how, ...parts] }];
  });
  return borne.length === 1 ? borne[0] : null;
}

/**
 * Checks that confirm the total findTotal chose, and only it (another amount they would confirm
 * may be a part paid or a total before a tip): cash of exactly the total with no change given
 * back; two partial totals, labelled more weakly than it, that add up to it ("Total 6% supplies
 * 35.99" + "Total 0% supplies 26.61" = "Total payable 62.60"); an earlier total and a rounding.
 */
function confirmsTheTotal(primary: { cents: number; line: number }, found: Candidate[], byRole: Record<Role, Candidate[]>): string[] {
  const checks: string[] = [];
  const change = byRole.change.some((c) => c.cents > 0);
  if (!change && byRole.cash.some((cash) => cash.cents === primary.cents && cash.line !== primary.line)) checks.push("cash, no change");
  const label = labelOf(found, primary);
  const partials = new Set<number>();
  for (const c of found) {
    const partial = c.line !== primary.line && c.label >= Label.TOTAL && c.label < label && roleOf(c) === "other";
    if (partial && partials.size < MOST_AMOUNTS) partials.add(c.cents);
  }
  const cents = primary.cents;
  for (const a of partials) {
    if (a !== cents && cents - a !== a && partials.has(cents - a)) {
      checks.push("partial totals");
      break;
    }
  }
  // An earlier total and the rounding adjustment printed with it ("Total incl. GST 5.04",
  // "Rounding adj 0.01", "Total 5.05").
  const earlier = new Set(found.filter((c) => c.line < primary.line && c.label >= Label.TOTAL && roleOf(c) === "other").map((c) => c.cents));
  if (byRole.rounding.some((r) => earlier.has(cents - r.cents))) checks.push("total ± rounding");
  return checks;
}

/** At most this many distinct amounts are read for sumAndDifference (a receipt has a few dozen). */
const MOST_AMOUNTS = 60;

/** The one amount that is both a + b and c − d of other distinct amounts on the receipt, if exactly one is. */
function sumAndDifference(found: Candidate[]): { cents: number; line: number } | null {
  const lineOf = new Map<number, number>();
  for (const c of found) if (c.cents > 0 && !lineOf.has(c.cents)) lineOf.set(c.cents, c.line);
  if (lineOf.size > MOST_AMOUNTS) return null;
  const values = [...lineOf.keys()];
  const both = values.filter((t) =>
    values.some((a) => a < t && a !== t - a && lineOf.has(t - a)) && values.some((d) => d > t && d - t !== t && lineOf.has(d - t)));
  return both.length === 1 ? { cents: both[0], line: lineOf.get(both[0])! } : null;
}

/**
 * What a positive total cannot be below: the subtotal less the largest discount, and any tax or
 * charge added to it (a refund or adjustment note, negative, has no such bound).
 */
function partsFloor(byRole: Record<Role, Candidate[]>): number {
  const discount = byRole.discount.reduce((m, c) => Math.max(m, Math.abs(c.cents)), 0);
  const subtotal = byRole.subtotal.reduce((m, c) => Math.max(m, c.cents), 0);
  const tax = byRole.tax.reduce((m, c) => Math.max(m, c.cents), 0);
  return Math.max(subtotal - discount, tax, 0);
}

/** The strongest label the receipt gives the amount findTotal chose, where it chose it. */
function labelOf(found: Candidate[], total: { cents: number; line: number }): number {
  return found.filter((c) => c.cents === total.cents && c.line === total.line).reduce((m, c) => Math.max(m, c.label), Label.NONE as number);
}
