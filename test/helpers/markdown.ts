import { readFileSync } from "node:fs";

/** A fenced code block: its language (`sh`, `sql`, … or empty), its text, where it is. */
export interface Fence {
  lang: string;
  text: string;
  /** 1-based line of the opening fence. */
  line: number;
  /** The heading the block stands under. */
  heading: string;
}

export interface Markdown {
  path: string;
  text: string;
  fences: Fence[];
  /** Every heading's text, in order, without its #s. */
  headings: { level: number; text: string; line: number }[];
  /** The text with every fenced block blanked out (lines kept, so that line numbers hold). */
  prose: string;
}

/** A markdown file's fenced blocks and headings; a fence indented in a list item counts too. */
export function readMarkdown(path: string): Markdown {
  const text = readFileSync(path, "utf8");
  const lines = text.split("\n");
  const fences: Fence[] = [];
  const headings: Markdown["headings"] = [];
  const prose: string[] = [];
  let heading = "";
  for (let i = 0; i < lines.length; i++) {
    const open = /^(\s*)```(\S*)\s*$/.exec(lines[i]);
    if (open) {
      const indent = open[1].length;
      const body: string[] = [];
      let j = i + 1;
      while (j < lines.length && !/^\s*```\s*$/.test(lines[j])) body.push(lines[j++].slice(indent));
      fences.push({ lang: open[2], text: body.join("\n"), line: i + 1, heading });
      for (let k = i; k <= j && k < lines.length; k++) prose.push("");
      i = j;
      continue;
    }
    const h = /^(#{1,6})\s+(.*?)\s*$/.exec(lines[i]);
    if (h) {
      heading = h[2];
      headings.push({ level: h[1].length, text: h[2], line: i + 1 });
    }
    prose.push(lines[i]);
  }
  return { path, text, fences, headings, prose: prose.join("\n") };
}

/** The anchor GitHub gives a heading: lower case, punctuation dropped, spaces as hyphens. */
export function slugOf(heading: string): string {
  return heading.trim().toLowerCase().replace(/[^\p{L}\p{N}\s_-]/gu, "").replace(/\s/g, "-");
}

/** The anchors of a file's headings, as GitHub makes them: a repeated one gets `-1`, `-2`, … */
export function anchorsOf(md: Markdown): Set<string> {
  const seen = new Map<string, number>();
  const anchors = new Set<string>();
  for (const h of md.headings) {
    const slug = slugOf(h.text);
    const n = seen.get(slug) ?? 0;
    seen.set(slug, n + 1);
    anchors.add(n === 0 ? slug : `${slug}-${n}`);
  }
  return anchors;
}

/** The text under a heading, down to the next heading of the same level or above. */
export function sectionOf(md: Markdown, heading: string): string {
  const start = md.headings.findIndex((h) => h.text === heading);
  if (start < 0) throw new Error(`${md.path} has no heading "${heading}"`);
  const end = md.headings.slice(start + 1).find((h) => h.level <= md.headings[start].level);
  const lines = md.prose.split("\n");
  return lines.slice(md.headings[start].line, end ? end.line - 1 : lines.length).join("\n");
}

/** Inline code spans of the prose (a span may wrap onto the next line), with their line. */
export function inlineCode(md: Markdown): { code: string; line: number }[] {
  const spans: { code: string; line: number }[] = [];
  for (const m of md.prose.matchAll(/(?<!`)`([^`]+)`(?!`)/g)) {
    spans.push({ code: m[1].replace(/\s*\n\s*/g, " "), line: md.prose.slice(0, m.index).split("\n").length });
  }
  return spans;
}

/** Links of the prose: `[text](target)`, with their line. */
export function linksOf(md: Markdown): { target: string; line: number }[] {
  return [...md.prose.matchAll(/\]\(([^)\s]+)\)/g)].map((m) => ({
    target: m[1],
    line: md.prose.slice(0, m.index).split("\n").length,
  }));
}

/** The rows of the tables in a text, each a list of its cells (`\|` inside a cell kept), header rows too. */
export function tableRows(text: string): string[][] {
  return text.split("\n")
    .filter((l) => l.startsWith("|") && !/^\|[-\s|]+\|$/.test(l))
    .map((l) => l.slice(1, -1).split(/(?<!\\)\|/).map((c) => c.trim()));
}
