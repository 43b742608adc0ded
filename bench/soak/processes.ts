import { commandOf, startTimeOf } from "../../src/processes.js";
import { memoryKb, processTree } from "../support.js";

/**
 * Every process of the soaked service's tree (npm, tsx, the API process, the document reader,
 * any worker child), sampled from /proc every 500 ms: each one's peak RSS, when it appeared and
 * when it went. Processes stay watched after they leave the tree (a child orphaned by a killed
 * API process is still ours), and their pids are checked against their start times so that a
 * reused pid is never taken for them.
 */
export interface WatchedProcess {
  pid: number;
  label: string;
  command: string;
  startTime: string;
  peakKb: number;
  /** Seconds since the watch started. */
  firstSeen: number;
  gone: number | null;
}

export class ProcessWatch {
  private readonly roots = new Set<number>();
  /** Every process seen, in order of appearance; `live` indexes those not gone by pid. */
  private readonly all: WatchedProcess[] = [];
  private readonly live = new Map<number, WatchedProcess>();
  private timer: NodeJS.Timeout | undefined;
  private readonly started = Date.now();
  private readonly onGone: ((p: WatchedProcess) => void)[] = [];
  /** The API process's RSS every 10 s (seconds since the start, MB): how fast it grew. */
  readonly apiTimeline: [number, number][] = [];
  private lastTimeline = -Infinity;

  watch(rootPid: number): void {
    this.roots.add(rootPid);
    this.sample();
  }

  start(): void {
    this.timer ??= setInterval(() => this.sample(), 500);
  }

  stop(): void {
    clearInterval(this.timer);
    this.timer = undefined;
    this.sample();
  }

  /** Called once for each watched process that exits. */
  whenGone(fn: (p: WatchedProcess) => void): void {
    this.onGone.push(fn);
  }

  processes(): WatchedProcess[] {
    return [...this.all];
  }

  /** The live API process (the one running src/main.ts), if any. */
  api(): WatchedProcess | undefined {
    return this.processes().find((p) => p.label === "API" && p.gone === null);
  }

  /** Live processes that are still the ones we saw start (for a last SIGKILL at the end). */
  alive(): WatchedProcess[] {
    return this.processes().filter((p) => p.gone === null && startTimeOf(p.pid) === p.startTime);
  }

  sample(): void {
    const now = (Date.now() - this.started) / 1000;
    const pids = new Set<number>(this.live.keys());
    for (const root of this.roots) for (const pid of processTree(root)) pids.add(pid);
    for (const pid of pids) {
      const startTime = startTimeOf(pid);
      let p = this.live.get(pid);
      // Gone, or its pid taken by another process since.
      if (p && p.startTime !== startTime) {
        this.live.delete(pid);
        this.markGone(p, now);
        p = undefined;
      }
      if (startTime === "gone") continue;
      if (!p) {
        const command = commandOf(pid).trim();
        if (!command) continue;
        p = { pid, label: labelOf(command), command: command.slice(0, 300), startTime, peakKb: 0, firstSeen: now, gone: null };
        this.live.set(pid, p);
        this.all.push(p);
      }
      // VmHWM: the kernel's own peak, which catches a spike between two samples.
      const rss = memoryKb(pid, "VmRSS");
      p.peakKb = Math.max(p.peakKb, rss, memoryKb(pid, "VmHWM"));
      if (p.label === "API" && now - this.lastTimeline >= 10) {
        this.lastTimeline = now;
        this.apiTimeline.push([Math.round(now), Math.round(rss / 1024)]);
      }
    }
  }

  private markGone(p: WatchedProcess, now: number): void {
    p.gone = now;
    for (const fn of this.onGone) fn(p);
  }
}

/** What a process is, from its command line. */
function labelOf(command: string): string {
  if (/^(\/bin\/)?sh /.test(command)) return "sh";
  if (/sandbox[/\\]child/.test(command)) return "document reader";
  // tsx runs the script in a child node with its loader (`--import …/tsx/dist/loader.mjs`); the
  // parent, `node …/.bin/tsx src/main.ts`, only launches it.
  if (/tsx[/\\]dist[/\\]cli|[/\\]\.bin[/\\]tsx /.test(command)) return "tsx launcher";
  if (/\bsrc[/\\]main\.ts\b/.test(command)) return "API";
  if (/\bsrc[/\\]cli[/\\]main\.ts\b/.test(command)) return "CLI";
  if (/\bworker[/\\](main|child)\.ts\b/.test(command)) return "worker";
  if (/(^|[/\\ ])npm(-cli\.js)?( |$)/.test(command)) return "npm";
  const script = command.split(" ").filter((a) => /\.(m?[jt]s)$/.test(a) && !/[/\\]tsx[/\\]/.test(a)).pop();
  return script ? `child ${script.split(/[/\\]/).slice(-2).join("/")}` : command.split(" ")[0].split("/").pop()!.slice(0, 40);
}
