/**
 * The receipt model (integer cents throughout) and the text templates. A template turns a
 * receipt into `Line`s; `toText` lays those out as fixed-width text (PNG, email), and the PDF
 * renderer draws the same lines with left/right alignment.
 */
import { formatDate, formatTime, NUMERIC_ORDER, type DateFormat } from "./dates.ts";
import type { Rng } from "./rng.ts";
import { ITEMS, REGIONS, type Vendor } from "./vendors.ts";

export type Line =
  | { k: "c"; s: string }
  | { k: "l"; s: string }
  | { k: "lr"; l: string; r: string }
  | { k: "rule"; ch: string }
  | { k: "blank" };

export interface Item {
  desc: string;
  qty: number;
  unit: number;
  amount: number;
  /** Fuel: litres (thousandths) and price per litre (tenths of a cent). */
  fuel?: { millilitres: number; priceMills: number };
}

export interface Money {
  items: Item[];
  subtotal: number;
  /** Charges added before tax (shipping, delivery, service fee). */
  fees: { label: string; cents: number }[];
  taxes: { label: string; rate: number; cents: number }[];
  tip: number;
  total: number;
  tender:
    | { kind: "card"; brand: string; last4: string; auth: string; entry: string }
    | { kind: "cash"; tendered: number; change: number };
}

export function cents(n: number, opts: { dollar?: boolean; comma?: boolean } = {}): string {
  const neg = n < 0;
  const a = Math.abs(n);
  let whole = String(Math.floor(a / 100));
  if (opts.comma) whole = whole.replace(/\B(?=(\d{3})+(?!\d))/g, ",");
  const s = `${opts.dollar ? "$" : ""}${whole}.${String(a % 100).padStart(2, "0")}`;
  return neg ? `-${s}` : s;
}

export function ratePct(rate: number): string {
  // thousandths of a percent -> "13%", "9.975%"
  const whole = Math.floor(rate / 1000);
  const frac = String(rate % 1000).padStart(3, "0").replace(/0+$/, "");
  return frac ? `${whole}.${frac}%` : `${whole}%`;
}

/** Builds the amounts of one receipt; every figure is integer cents and they add up. */
export function buildMoney(rng: Rng, vendor: Vendor, opts: { tipped: boolean; fees: boolean; cashOk: boolean }): Money {
  const region = REGIONS[vendor.region]!;
  const pool = ITEMS[vendor.category];
  const items: Item[] = [];
  if (vendor.category === "gas") {
    const millilitres = rng.int(18_000, 64_000);
    const priceMills = region.country === "US" ? rng.int(1099, 1499) /* USD/gal-ish, shown per L */ : rng.int(1399, 1799);
    items.push({ desc: rng.pick(["REGULAR", "UNLEADED 87", "PREMIUM 91", "DIESEL"]), qty: 1, unit: 0, amount: Math.round((millilitres * priceMills) / 10_000), fuel: { millilitres, priceMills } });
  }
  const nItems = vendor.category === "gas" ? rng.int(0, 2) : vendor.category === "software" || vendor.category === "parking" ? 1 : rng.int(1, 5);
  const used = new Set<string>();
  for (let i = 0; i < nItems; i++) {
    const [desc, lo, hi, maxQ] = rng.pick(pool);
    if (used.has(desc)) continue;
    used.add(desc);
    const qty = rng.chance(0.45) ? rng.int(1, maxQ) : 1;
    const unit = rng.int(lo, hi);
    items.push({ desc, qty, unit, amount: qty * unit });
  }
  if (items.length === 0) {
    const [desc, lo, hi] = pool[0]!;
    const unit = rng.int(lo, hi);
    items.push({ desc, qty: 1, unit, amount: unit });
  }
  const subtotal = items.reduce((s, it) => s + it.amount, 0);
  const fees: Money["fees"] = [];
  if (opts.fees) fees.push({ label: rng.pick(["Shipping", "Delivery fee", "Service fee"]), cents: rng.int(299, 1499) });
  const base = subtotal + fees.reduce((s, f) => s + f.cents, 0);
  const taxes = region.taxes.map((t) => ({ label: t.label, rate: t.rate, cents: Math.round((base * t.rate) / 100_000) }));
  const taxSum = taxes.reduce((s, t) => s + t.cents, 0);
  let tip = 0;
  if (opts.tipped) {
    const pct = rng.pick([10, 12, 15, 18, 20]);
    tip = rng.chance(0.7) ? Math.round(((rng.chance(0.5) ? base : base + taxSum) * pct) / 100) : rng.pick([100, 200, 300, 500, 1000]);
  }
  const total = base + taxSum + tip;
  let tender: Money["tender"];
  if (opts.cashOk && tip === 0 && rng.chance(0.3)) {
    const steps = [500, 1000, 2000, 5000, 10000, 20000];
    const tendered = steps.find((s) => s >= total) ?? Math.ceil(total / 10000) * 10000;
    const t = rng.chance(0.3) ? Math.ceil(total / 100) * 100 : tendered;
    tender = { kind: "cash", tendered: t, change: t - total };
  } else {
    tender = {
      kind: "card",
      brand: region.country === "CA" ? rng.pick(["VISA", "VISA", "MASTERCARD", "MC", "AMEX", "INTERAC", "DEBIT"]) : rng.pick(["VISA", "MASTERCARD", "AMEX", "DISCOVER"]),
      last4: rng.digits(4),
      auth: rng.digits(6),
      entry: rng.pick(["TAP", "CHIP", "INSERTED", "CONTACTLESS", "SWIPED"]),
    };
  }
  return { items, subtotal, fees, taxes, tip, total, tender };
}

export interface TemplateInput {
  rng: Rng;
  vendor: Vendor;
  money: Money;
  day: number;
  dateFormat: DateFormat;
  /** "CAD"/"USD" when the receipt states its currency, else null. */
  currency: string | null;
  upperName: boolean;
}

export type Template = "thermal" | "restaurant" | "gas" | "invoice" | "software" | "orderEmail" | "posEmail";

const CASHIERS = ["Dana", "Priya", "Marc", "Jordan", "Sam", "Wei", "Olivia", "Mateo", "Chloé", "Aiden", "Fatima", "Liam"];
const LOGOS = ["*** ~~~ ***", "=============", "<<< >>>", "/\\/\\/\\/\\/\\", "~*~*~*~*~", "+-+-+-+-+", "#############", "o o o o o"];
const THANKS = ["Thank you!", "THANK YOU FOR SHOPPING WITH US", "Thank you - please come again", "THANK YOU FOR YOUR BUSINESS", "Merci / Thank you", "Thanks for visiting!", "Have a great day!"];

function regNo(rng: Rng): string {
  return `${rng.digits(9)} RT0001`;
}

function phone(rng: Rng, vendor: Vendor): string {
  const area = { ON: "416", BC: "604", QC: "514", AB: "403", NS: "902", MB: "204", SK: "306", WA: "206", NY: "716", VT: "802", PA: "412", WEB_CA: "647", WEB_US: "415" }[vendor.region] ?? "555";
  return `(${area}) 555-${rng.digits(4)}`;
}

function cityLine(rng: Rng, vendor: Vendor): string {
  const region = REGIONS[vendor.region]!;
  return `${vendor.city}, ${region.code} ${region.postal(rng.digits(3), rng.letters(2))}`;
}

function displayName(t: TemplateInput): string {
  return t.upperName ? t.vendor.name.toUpperCase() : t.vendor.name;
}

function dateText(t: TemplateInput, weekday = false): string {
  // No weekday on numeric dates: it would settle an ambiguous day/month order.
  return formatDate(t.day, t.dateFormat, { weekday: weekday && !NUMERIC_ORDER[t.dateFormat] });
}

function itemLines(t: TemplateInput, style: "qtyFirst" | "atLine" | "xSuffix", money = true): Line[] {
  const out: Line[] = [];
  for (const it of t.money.items) {
    if (it.fuel) {
      const litres = (it.fuel.millilitres / 1000).toFixed(3);
      const price = (it.fuel.priceMills / 1000).toFixed(3);
      out.push({ k: "l", s: `PUMP ${String(t.rng.int(1, 12)).padStart(2, "0")}  ${it.desc}` });
      out.push({ k: "lr", l: `${litres} L @ $${price}/L`, r: cents(it.amount, { dollar: money }) });
      continue;
    }
    const amt = cents(it.amount);
    if (it.qty === 1) out.push({ k: "lr", l: it.desc, r: amt });
    else if (style === "qtyFirst") out.push({ k: "lr", l: `${it.qty} ${it.desc}`, r: amt });
    else if (style === "xSuffix") out.push({ k: "lr", l: `${it.desc} x${it.qty}`, r: amt });
    else {
      out.push({ k: "l", s: it.desc });
      out.push({ k: "lr", l: `  ${it.qty} @ ${cents(it.unit)}`, r: amt });
    }
  }
  return out;
}

function totalsLines(t: TemplateInput, opts: { upper: boolean; dollar: boolean; amountBeforeTip?: boolean }): Line[] {
  const m = t.money;
  const L = (s: string) => (opts.upper ? s.toUpperCase() : s);
  const c = (n: number) => cents(n, { dollar: opts.dollar });
  const out: Line[] = [{ k: "lr", l: L(t.rng.pick(["Subtotal", "Sub-total", "Subtotal"])), r: c(m.subtotal) }];
  for (const f of m.fees) out.push({ k: "lr", l: L(f.label), r: c(f.cents) });
  for (const tax of m.taxes) {
    const label = t.rng.pick([`${tax.label} ${ratePct(tax.rate)}`, `${tax.label} (${ratePct(tax.rate)})`, `${tax.label} @ ${ratePct(tax.rate)}`]);
    out.push({ k: "lr", l: L(label), r: c(tax.cents) });
  }
  if (m.tip > 0) {
    if (opts.amountBeforeTip) out.push({ k: "lr", l: L("Amount"), r: c(m.total - m.tip) });
    out.push({ k: "lr", l: L(t.rng.pick(["Tip", "Gratuity", "Tip"])), r: c(m.tip) });
  }
  const cur = t.currency ? ` ${t.currency}` : "";
  out.push({ k: "lr", l: L(`Total${cur}`), r: c(m.total) });
  return out;
}

function tenderLines(t: TemplateInput, upper: boolean): Line[] {
  const m = t.money;
  const L = (s: string) => (upper ? s.toUpperCase() : s);
  if (m.tender.kind === "cash") {
    return [
      { k: "lr", l: L("Cash tendered"), r: cents(m.tender.tendered) },
      { k: "lr", l: L("Change due"), r: cents(m.tender.change) },
    ];
  }
  const tn = m.tender;
  const mask = t.rng.pick([`************${tn.last4}`, `XXXX XXXX XXXX ${tn.last4}`, `**** ${tn.last4}`]);
  return [
    { k: "lr", l: tn.brand, r: cents(m.total) },
    { k: "l", s: `${L("Card")}: ${mask}  ${tn.entry}` },
    { k: "l", s: `${L("Auth")} #: ${tn.auth}   ${upper ? "APPROVED" : "Approved"}` },
  ];
}

function header(t: TemplateInput, opts: { logo: boolean; title?: string }): Line[] {
  const { rng, vendor } = t;
  const out: Line[] = [];
  if (opts.logo) out.push({ k: "c", s: rng.pick(LOGOS) });
  out.push({ k: "c", s: displayName(t) });
  out.push({ k: "c", s: vendor.street });
  out.push({ k: "c", s: cityLine(rng, vendor) });
  out.push({ k: "c", s: `Tel ${phone(rng, vendor)}` });
  const region = REGIONS[vendor.region]!;
  if (region.regLabel && rng.chance(0.85)) out.push({ k: "c", s: `${region.regLabel} ${regNo(rng)}` });
  if (opts.title) out.push({ k: "blank" }, { k: "c", s: opts.title });
  return out;
}

function dateTimeLines(t: TemplateInput): Line[] {
  const { rng } = t;
  const d = dateText(t);
  const time = formatTime(rng, t.dateFormat === "iso" ? rng.pick(["24", "24s"] as const) : rng.pick(["24", "24s", "12"] as const));
  switch (rng.int(0, 4)) {
    case 0: return [{ k: "lr", l: `Date: ${d}`, r: `Time: ${time}` }];
    case 1: return [{ k: "l", s: `${d} ${time}` }];
    case 2: return [{ k: "l", s: t.dateFormat === "iso" ? `${d}T${time}` : `${d}@${time}` }];
    case 3: return [{ k: "l", s: `DATE ${d}` }, { k: "l", s: `TIME ${time}` }];
    default: return [{ k: "lr", l: `${d} ${time}`, r: `#${rng.digits(4)}` }];
  }
}

function rule(rng: Rng): Line {
  return { k: "rule", ch: rng.pick(["-", "=", "-", "*", "."]) };
}

export function render(template: Template, t: TemplateInput): Line[] {
  const { rng, vendor, money } = t;
  switch (template) {
    case "thermal": {
      const upper = rng.chance(0.6);
      const lines = header(t, { logo: rng.chance(0.4), title: rng.chance(0.35) ? rng.pick(["RECEIPT", "SALES RECEIPT", "TAX INVOICE"]) : undefined });
      lines.push(rule(rng), ...dateTimeLines(t));
      lines.push({ k: "l", s: `Store ${vendor.store ?? rng.digits(3)} Reg ${rng.int(1, 9)} Trn ${rng.digits(4)}` });
      if (rng.chance(0.6)) lines.push({ k: "l", s: `Cashier: ${rng.pick(CASHIERS)}` });
      lines.push(rule(rng), ...itemLines(t, rng.pick(["qtyFirst", "atLine", "xSuffix"] as const)), rule(rng));
      lines.push(...totalsLines(t, { upper, dollar: rng.chance(0.3) }), { k: "blank" }, ...tenderLines(t, upper), { k: "blank" });
      if (vendor.category === "hardware" || vendor.category === "electronics") lines.push({ k: "c", s: "Returns within 30 days with receipt" });
      lines.push({ k: "c", s: rng.pick(THANKS) });
      return lines;
    }
    case "restaurant": {
      const lines = header(t, { logo: rng.chance(0.3) });
      lines.push({ k: "blank" }, { k: "lr", l: `Server: ${rng.pick(CASHIERS)}`, r: `Table ${rng.int(1, 40)}` }, { k: "lr", l: `Check #${rng.digits(4)}`, r: `Guests: ${rng.int(1, 6)}` });
      lines.push(...dateTimeLines(t), rule(rng), ...itemLines(t, "qtyFirst"), rule(rng));
      lines.push(...totalsLines(t, { upper: true, dollar: false, amountBeforeTip: rng.chance(0.6) }), { k: "blank" }, ...tenderLines(t, true));
      lines.push({ k: "blank" }, { k: "c", s: "CUSTOMER COPY" }, { k: "c", s: rng.pick(THANKS) });
      return lines;
    }
    case "gas": {
      const lines = header(t, { logo: rng.chance(0.5) });
      lines.push(rule(rng), ...dateTimeLines(t), { k: "l", s: `SITE ${vendor.store ?? rng.digits(4)}  TRAN ${rng.digits(6)}` }, rule(rng));
      lines.push(...itemLines(t, "qtyFirst", false), rule(rng), ...totalsLines(t, { upper: true, dollar: false }), { k: "blank" }, ...tenderLines(t, true));
      lines.push({ k: "blank" }, { k: "c", s: rng.pick(THANKS) }, { k: "c", s: "DRIVE SAFELY" });
      return lines;
    }
    case "invoice": {
      const lines = header(t, { logo: false, title: rng.pick(["TAX INVOICE", "INVOICE", "SALES INVOICE"]) });
      lines.push({ k: "blank" }, { k: "lr", l: `Invoice No: ${rng.pick(["INV-", "", "S"])}${rng.digits(6)}`, r: `Date: ${dateText(t)}` });
      lines.push({ k: "l", s: `Bill to: ${rng.pick(["Northwind Renovations", "Acme Bookkeeping Ltd.", "J. Tremblay", "Birchwood Design Studio", "Walk-in Customer"])}` });
      lines.push({ k: "l", s: `Terms: ${rng.pick(["Paid in full", "Due on receipt", "COD"])}` }, rule(rng));
      lines.push({ k: "lr", l: "QTY  DESCRIPTION", r: "AMOUNT" }, rule(rng));
      for (const it of money.items) lines.push({ k: "lr", l: `${String(it.qty).padStart(3)}  ${it.desc} @ ${cents(it.unit)}`, r: cents(it.amount) });
      lines.push(rule(rng), ...totalsLines(t, { upper: false, dollar: true }));
      const tn = money.tender;
      lines.push({ k: "blank" }, tn.kind === "card" ? { k: "lr", l: `Paid by ${tn.brand} ****${tn.last4}`, r: cents(money.total) } : { k: "lr", l: "Paid cash", r: cents(tn.tendered) });
      lines.push({ k: "lr", l: "Balance due", r: "0.00" }, { k: "blank" }, { k: "c", s: "Thank you for your business" });
      return lines;
    }
    case "software": {
      const lines: Line[] = [{ k: "l", s: `Receipt from ${vendor.name}` }, { k: "l", s: `${vendor.street}, ${vendor.city}` }, { k: "l", s: vendor.web ?? "" }, { k: "blank" }];
      lines.push({ k: "lr", l: "Receipt number", r: `${rng.digits(4)}-${rng.digits(4)}` }, { k: "lr", l: "Invoice number", r: `${rng.letters(4)}${rng.digits(4)}-${rng.digits(4)}` });
      lines.push({ k: "lr", l: "Date paid", r: dateText(t) });
      const tn = money.tender;
      if (tn.kind === "card") lines.push({ k: "lr", l: "Payment method", r: `${tn.brand} - ${tn.last4}` });
      const periodStart = formatDate(t.day, "monDY");
      const periodEnd = formatDate(t.day + 30, "monDY");
      lines.push({ k: "blank" }, { k: "l", s: `Billing period: ${periodStart} - ${periodEnd}` }, rule(rng));
      lines.push(...itemLines(t, "xSuffix"), rule(rng), ...totalsLines(t, { upper: false, dollar: true }));
      lines.push({ k: "lr", l: "Amount paid", r: `${cents(money.total, { dollar: true })}${t.currency ? " " + t.currency : ""}` });
      lines.push({ k: "blank" }, { k: "l", s: `Questions? Contact billing@${vendor.web ?? "example.com"}` });
      return lines;
    }
    case "orderEmail": {
      const lines: Line[] = [];
      lines.push({ k: "l", s: rng.pick(["Hi there,", "Hello Alex,", "Hi Morgan,", "Bonjour,"]) }, { k: "blank" });
      lines.push({ k: "l", s: `Thanks for your order from ${vendor.name}! Here is your receipt.` }, { k: "blank" });
      lines.push({ k: "l", s: `Order #${rng.pick(["", "W", "A-"])}${rng.digits(rng.int(5, 8))}` });
      lines.push({ k: "l", s: `${rng.pick(["Order date", "Placed on", "Date"])}: ${dateText(t, rng.chance(0.4))}` }, { k: "blank" });
      for (const it of money.items) lines.push({ k: "lr", l: `${it.desc} x ${it.qty}`, r: cents(it.amount, { dollar: true }) });
      lines.push(rule(rng), ...totalsLines(t, { upper: false, dollar: true }).map((l) => (l.k === "lr" ? { ...l, l: `${l.l}:` } : l)));
      const tn = money.tender;
      if (tn.kind === "card") lines.push({ k: "blank" }, { k: "l", s: `Paid with ${tn.brand[0]}${tn.brand.slice(1).toLowerCase()} ending in ${tn.last4}` });
      lines.push({ k: "blank" }, { k: "l", s: `Questions about your order? Reply to this email or call ${phone(rng, vendor)}.` });
      lines.push({ k: "blank" }, { k: "l", s: `${vendor.name} | ${vendor.street}, ${cityLine(rng, vendor)}` });
      const reg = REGIONS[vendor.region]!.regLabel;
      if (reg) lines.push({ k: "l", s: `${reg} ${regNo(rng)}` });
      lines.push({ k: "l", s: "You are receiving this email because you made a purchase. Unsubscribe." });
      return lines;
    }
    case "posEmail": {
      const lines: Line[] = [];
      lines.push({ k: "c", s: cents(money.total, { dollar: true }) }, { k: "blank" }, { k: "c", s: vendor.name }, { k: "blank" });
      for (const it of money.items) lines.push({ k: "lr", l: it.qty > 1 ? `${it.desc} (${it.qty} x ${cents(it.unit, { dollar: true })})` : it.desc, r: cents(it.amount, { dollar: true }) });
      lines.push(rule(rng), ...totalsLines(t, { upper: false, dollar: true }), rule(rng));
      const tn = money.tender;
      if (tn.kind === "card") lines.push({ k: "lr", l: `${tn.brand} ${tn.last4}`, r: cents(money.total, { dollar: true }) });
      else lines.push(...tenderLines(t, false));
      const time = formatTime(rng, "12");
      lines.push({ k: "blank" }, { k: "c", s: `${dateText(t)} at ${time}` }, { k: "c", s: `#${rng.letters(4, "abcdefghijkmnpqrstuvwxyzABCDEFGHJKLMNPQRSTUVWXYZ23456789")}` });
      lines.push({ k: "blank" }, { k: "c", s: `${vendor.street}, ${cityLine(rng, vendor)}` }, { k: "c", s: phone(rng, vendor) });
      lines.push({ k: "blank" }, { k: "c", s: "Receipt sent by PayNook. Manage preferences." });
      return lines;
    }
  }
}

/** Fixed-width text layout of lines. */
export function toText(lines: Line[], width: number): string {
  const out: string[] = [];
  for (const line of lines) {
    switch (line.k) {
      case "blank": out.push(""); break;
      case "l": out.push(line.s); break;
      case "rule": out.push(line.ch.repeat(width)); break;
      case "c": {
        const pad = Math.max(0, Math.floor((width - line.s.length) / 2));
        out.push(" ".repeat(pad) + line.s);
        break;
      }
      case "lr": {
        const gap = width - line.l.length - line.r.length;
        if (gap >= 1) out.push(line.l + " ".repeat(gap) + line.r);
        else if (line.l.length + 1 + line.r.length <= width + 8) out.push(`${line.l} ${line.r}`);
        else out.push(line.l, " ".repeat(Math.max(0, width - line.r.length)) + line.r);
        break;
      }
    }
  }
  return out.map((l) => l.replace(/\s+$/, "")).join("\n") + "\n";
}

/** Email style: label and value without padding (most e-receipts are HTML collapsed to text). */
export function toEmailText(lines: Line[], padded: boolean): string {
  if (padded) return toText(lines, 48);
  return (
    lines
      .map((l) => (l.k === "blank" ? "" : l.k === "rule" ? l.ch.repeat(24) : l.k === "lr" ? `${l.l} ${l.r}` : l.s))
      .join("\n") + "\n"
  );
}
