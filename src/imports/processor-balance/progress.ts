/**
 * A one-line progress display on a terminal: rewritten in place with `\r`, on stderr, only when
 * stderr is a TTY, and only once the import has lasted `delayMs` (nothing for short files, pipes,
 * logs or --json). Redrawn five times a second from the latest state, so a long final phase
 * (posting) shows too.
 */
export interface Progress {
  update(p: { phase: "reading" | "posting"; rows: number; bytes: number }): void;
  done(): void;
}

export function terminalProgress(totalBytes: number,
    { enabled = true, out = process.stderr, delayMs = 500 }: { enabled?: boolean; out?: NodeJS.WriteStream; delayMs?: number } = {}): Progress {
  if (!enabled || !out.isTTY) return { update() {}, done() {} };
  const started = Date.now();
  let state: { phase: "reading" | "posting"; rows: number; bytes: number } = { phase: "reading", rows: 0, bytes: 0 };
  let shown = false;
  const count = (n: number) => n.toLocaleString("en-US");
  const draw = () => {
    if (Date.now() - started < delayMs) return;
    shown = true;
    const line = state.phase === "reading"
      ? `Reading: ${count(state.rows)} rows${totalBytes > 0 ? ` (${Math.min(100, Math.floor((state.bytes / totalBytes) * 100))}%)` : ""}`
      : `Posting ${count(state.rows)} rows…`;
    out.write(`\r${line}\x1b[K`);
  };
  const timer = setInterval(draw, 200);
  timer.unref();
  return {
    update(p) {
      state = p;
    },
    done() {
      clearInterval(timer);
      if (shown) out.write("\r\x1b[K");
    },
  };
}
