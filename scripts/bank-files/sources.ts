/**
 * The bank-file source lists (sources.json, holdout.json) and where their files live, shared by
 * eval.ts (which reads them) and gather.ts (which copies them from their repositories).
 */
import { readFileSync } from "node:fs";
import { dirname, isAbsolute, join, relative, resolve } from "node:path";
import { fileURLToPath } from "node:url";

export interface Source {
  file: string;
  format: string;
  repo: string;
  path: string;
  commit: string;
  license?: string;
  /** The payment account's type the file belongs to, when it matters (a card statement). */
  accountType?: string;
  expected: { rows: number; total: string; date: string; currency?: string };
  flags?: string[];
  /** The value a person reading the file gives a flag when a refusal offers several (`{"--decimal": "point"}`). */
  answers?: Record<string, string>;
  notes?: string;
}

const here = dirname(fileURLToPath(import.meta.url));
export const root = resolve(here, "..", "..");

export interface SourceList {
  sourcesPath: string;
  corpus: string;
  /** The corpus folder relative to the repository root, with forward slashes. */
  corpusRel: string;
  sources: Source[];
  /** Extra --name value arguments the script allowed. */
  extra: Record<string, string>;
  /** Where an entry's file lives: relative to the root when it starts with the corpus folder's path, else to the corpus. */
  filePath(file: string): string;
}

/** --sources <file> and --corpus <folder> (also --name=value), plus the script's own `allowed` names. */
export function sourceList(script: string, argv: string[], allowed: string[] = []): SourceList {
  const names = new Set(["--sources", "--corpus", ...allowed]);
  const args: Record<string, string> = {};
  for (let i = 0; i < argv.length; i++) {
    const [name, inline] = argv[i].split("=", 2) as [string, string | undefined];
    if (!names.has(name)) {
      console.error(`${script}: unknown argument "${argv[i]}" (it takes ${[...names].map((n) => `${n} <…>`).join(", ")})`);
      process.exit(2);
    }
    const value = inline ?? argv[++i];
    if (value === undefined || value === "") {
      console.error(`${script}: ${name} needs a value`);
      process.exit(2);
    }
    args[name] = value;
  }
  const fromRoot = (p: string) => (isAbsolute(p) ? p : resolve(root, p));
  const sourcesPath = args["--sources"] ? fromRoot(args["--sources"]) : join(here, "sources.json");
  const corpus = args["--corpus"] ? fromRoot(args["--corpus"]) : join(root, "corpus", "bank-files");
  const corpusRel = relative(root, corpus).split("\\").join("/");
  const extra = Object.fromEntries(Object.entries(args).filter(([k]) => allowed.includes(k)));
  return {
    sourcesPath,
    corpus,
    corpusRel,
    sources: JSON.parse(readFileSync(sourcesPath, "utf8")) as Source[],
    extra,
    filePath(file: string) {
      if (isAbsolute(file)) return file;
      return file.startsWith(corpusRel + "/") ? join(root, file) : join(corpus, file);
    },
  };
}
