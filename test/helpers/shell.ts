/**
 * Just enough of the shell's grammar to read the commands the docs show: quotes, backslashes,
 * `$(…)`, `NAME=value` before a command, `&&`, `;`, `|` and `&` between commands, `#` comments,
 * lines continued with a backslash, and the usage notation `[--option value]` for what may be left
 * out. Variables are kept as written (`$KEY`): the caller substitutes what it knows.
 */

export interface Word {
  text: string;
  /** Inside `[…]`: may be left out. */
  optional: boolean;
  /** The command of a `$(…)` in the word. */
  substitution?: string;
}

export interface Command {
  /** `NAME=value` words before the command. */
  env: Word[];
  words: Word[];
  /** 1-based line in the block. */
  line: number;
}

/** A line of a block: commands, or a comment line (which the docs use for an answer). */
export type Statement = { kind: "commands"; commands: Command[]; line: number } | { kind: "comment"; text: string; line: number };

const OPERATOR = /^(&&|\|\||;|\||&)(?=\s|$)/;
const ASSIGNMENT = /^[A-Za-z_][A-Za-z0-9_]*=/;

/** The words of one logical line, and the operators between commands (as words of their own). */
function words(line: string): (Word | { operator: string })[] {
  const out: (Word | { operator: string })[] = [];
  let depth = 0;
  let i = 0;
  while (i < line.length) {
    if (/\s/.test(line[i])) { i++; continue; }
    if (line[i] === "#") break;
    // Inside `[…]`, `|` separates alternatives (`[--sroie DIR | --no-sroie]`), not commands.
    const op = depth === 0 ? OPERATOR.exec(line.slice(i)) : null;
    if (op) { out.push({ operator: op[1] }); i += op[1].length; continue; }
    while (line[i] === "[") { depth++; i++; }
    const word: Word = { text: "", optional: depth > 0 };
    let closes = 0;
    while (i < line.length && !/\s/.test(line[i])) {
      const c = line[i];
      if (c === "'") {
        const end = line.indexOf("'", i + 1);
        if (end < 0) throw new Error(`unclosed ' in: ${line}`);
        word.text += line.slice(i + 1, end);
        i = end + 1;
      } else if (c === '"') {
        i++;
        while (i < line.length && line[i] !== '"') {
          if (line[i] === "\\" && '"\\$`'.includes(line[i + 1])) i++;
          word.text += line[i++];
        }
        if (i >= line.length) throw new Error(`unclosed " in: ${line}`);
        i++;
      } else if (c === "\\") {
        word.text += line[i + 1] ?? "";
        i += 2;
      } else if (c === "$" && line[i + 1] === "(") {
        const end = closingParen(line, i + 2);
        word.substitution = line.slice(i + 2, end);
        word.text += "$(…)";
        i = end + 1;
      } else if (c === "]" && (i + 1 === line.length || /[\s\]]/.test(line[i + 1]))) {
        closes++;
        i++;
      } else if ((c === ";" || c === "&") && OPERATOR.test(line.slice(i))) {
        break; // `cmd;` or `cmd &`: the operator ends the word
      } else {
        word.text += c;
        i++;
      }
    }
    out.push(word);
    depth = Math.max(0, depth - closes);
  }
  return out;
}

function closingParen(line: string, from: number): number {
  let depth = 1;
  let quote: string | undefined;
  for (let i = from; i < line.length; i++) {
    const c = line[i];
    if (quote) { if (c === quote) quote = undefined; continue; }
    if (c === "'" || c === '"') quote = c;
    else if (c === "(") depth++;
    else if (c === ")" && --depth === 0) return i;
  }
  throw new Error(`unclosed $( in: ${line}`);
}

/** The statements of a shell block, line by line (a line ending in `\` goes on). */
export function parseShell(block: string): Statement[] {
  const statements: Statement[] = [];
  const lines = block.split("\n");
  for (let i = 0; i < lines.length; i++) {
    const line = i + 1;
    let text = lines[i];
    while (text.endsWith("\\") && i + 1 < lines.length) text = text.slice(0, -1) + " " + lines[++i];
    if (text.trim() === "") continue;
    if (text.trim().startsWith("#")) {
      statements.push({ kind: "comment", text: text.trim().replace(/^#\s?/, ""), line });
      continue;
    }
    const commands: Command[] = [];
    let current: Command = { env: [], words: [], line };
    for (const w of words(text)) {
      if ("operator" in w) {
        commands.push(current);
        current = { env: [], words: [], line };
      } else if (current.words.length === 0 && ASSIGNMENT.test(w.text)) {
        current.env.push(w);
      } else {
        current.words.push(w);
      }
    }
    commands.push(current);
    statements.push({ kind: "commands", commands: commands.filter((c) => c.env.length + c.words.length > 0), line });
  }
  return statements;
}

/** Every command of a block, those inside `$(…)` included. */
export function commandsOf(block: string): Command[] {
  const all: Command[] = [];
  const visit = (statements: Statement[]) => {
    for (const s of statements) {
      if (s.kind !== "commands") continue;
      for (const c of s.commands) {
        all.push(c);
        for (const w of [...c.env, ...c.words]) if (w.substitution) visit(parseShell(w.substitution));
      }
    }
  };
  visit(parseShell(block));
  return all.filter((c) => c.words.length > 0);
}

/** An `NAME=value` word: its name and value. */
export function assignment(word: Word): { name: string; value: string } {
  const eq = word.text.indexOf("=");
  return { name: word.text.slice(0, eq), value: word.text.slice(eq + 1) };
}
