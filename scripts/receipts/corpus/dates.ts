/** Calendar helpers on whole days (UTC, never the clock) and the receipt date formats. */
import type { Rng } from "./rng.ts";

const DAY_MS = 86_400_000;
const MONTHS = ["January", "February", "March", "April", "May", "June", "July", "August", "September", "October", "November", "December"];
const WEEKDAYS = ["Sun", "Mon", "Tue", "Wed", "Thu", "Fri", "Sat"];

/** Days since 1970-01-01. */
export function dayOf(y: number, m: number, d: number): number {
  return Math.round(Date.UTC(y, m - 1, d) / DAY_MS);
}

export function ymd(day: number): { y: number; m: number; d: number; wd: number } {
  const dt = new Date(day * DAY_MS);
  return { y: dt.getUTCFullYear(), m: dt.getUTCMonth() + 1, d: dt.getUTCDate(), wd: dt.getUTCDay() };
}

export function iso(day: number): string {
  const { y, m, d } = ymd(day);
  return `${y}-${p2(m)}-${p2(d)}`;
}

export function p2(n: number): string {
  return String(n).padStart(2, "0");
}

export type DateFormat =
  | "iso" // 2023-03-14
  | "ymdSlash" // 2023/03/14
  | "dmy" // 14/03/2023
  | "mdy" // 03/14/2023
  | "dmy2" // 14/03/23
  | "mdy2" // 03/14/23
  | "monDY" // Mar 14, 2023
  | "dMonY" // 14 Mar 2023
  | "monthDY" // March 14 2023
  | "dMONyy"; // 14-MAR-23

export const NUMERIC_ORDER: Partial<Record<DateFormat, "DMY" | "MDY">> = { dmy: "DMY", dmy2: "DMY", mdy: "MDY", mdy2: "MDY" };

export function formatDate(day: number, f: DateFormat, opts: { weekday?: boolean; sep?: string } = {}): string {
  const { y, m, d, wd } = ymd(day);
  const mon = MONTHS[m - 1]!.slice(0, 3);
  const yy = p2(y % 100);
  const sep = opts.sep ?? "/";
  let s: string;
  switch (f) {
    case "iso": s = `${y}-${p2(m)}-${p2(d)}`; break;
    case "ymdSlash": s = `${y}/${p2(m)}/${p2(d)}`; break;
    case "dmy": s = `${p2(d)}${sep}${p2(m)}${sep}${y}`; break;
    case "mdy": s = `${p2(m)}${sep}${p2(d)}${sep}${y}`; break;
    case "dmy2": s = `${p2(d)}${sep}${p2(m)}${sep}${yy}`; break;
    case "mdy2": s = `${p2(m)}${sep}${p2(d)}${sep}${yy}`; break;
    case "monDY": s = `${mon} ${d}, ${y}`; break;
    case "dMonY": s = `${d} ${mon} ${y}`; break;
    case "monthDY": s = `${MONTHS[m - 1]} ${d} ${y}`; break;
    case "dMONyy": s = `${p2(d)}-${mon.toUpperCase()}-${yy}`; break;
  }
  return opts.weekday ? `${WEEKDAYS[wd]}, ${s}` : s;
}

/** A time of day, in one of several styles. */
export function formatTime(rng: Rng, style: "24" | "24s" | "12"): string {
  const h = rng.int(7, 21);
  const min = rng.int(0, 59);
  if (style === "24") return `${p2(h)}:${p2(min)}`;
  if (style === "24s") return `${p2(h)}:${p2(min)}:${p2(rng.int(0, 59))}`;
  return `${h % 12 === 0 ? 12 : h % 12}:${p2(min)} ${h < 12 ? "AM" : "PM"}`;
}

/** Day-and-month both ≤ 12 and different: DMY and MDY readings give two different dates. */
export function isAmbiguous(day: number, f: DateFormat): boolean {
  if (!NUMERIC_ORDER[f]) return false;
  const { m, d } = ymd(day);
  return d <= 12 && m <= 12 && d !== m;
}

/** The other reading of an ambiguous numeric date. */
export function swappedReading(day: number): number {
  const { y, m, d } = ymd(day);
  return dayOf(y, d, m);
}
