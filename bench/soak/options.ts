import path from "node:path";

/** `npm run bench -- soak <name|all> [--seconds N] [--root DIR] [--out FILE] [--keep] [--migrate-current] [--idle-source ADDR] [--max-rss-gb N]` */
export interface SoakOptions {
  /** Scenario length in seconds; each scenario has its own default. */
  seconds: number | undefined;
  /** The checkout whose `npm start` is soaked (this repository by default). */
  root: string;
  /** Each result's JSON line is appended here too. */
  out: string | undefined;
  /** Keep the database and the data folder (logs, uploads) for a look afterwards. */
  keep: boolean;
  /**
   * Also apply migrations/current.sql before `npm start` (which applies committed migrations
   * only): for soaking work in progress that has not been committed as a migration yet.
   */
  migrateCurrent: boolean;
  /** Loopback source address of attacking SMTP sessions (smtp-idle); the real sender uses 127.0.0.1. */
  idleSource: string | undefined;
  /**
   * A process of the service past this RSS ends the run at once (SIGKILL): the machine is shared,
   * and an endless listing grew the API past 12 GB in two minutes. Default 6 GB.
   */
  maxRssGb: number;
}

export function parseOptions(args: string[]): { names: string[]; options: SoakOptions } {
  const names: string[] = [];
  const options: SoakOptions = { seconds: undefined, root: process.cwd(), out: undefined, keep: false, migrateCurrent: false, idleSource: undefined, maxRssGb: 6 };
  for (let i = 0; i < args.length; i++) {
    const arg = args[i];
    const value = () => {
      const v = args[++i];
      if (v === undefined) throw new Error(`${arg} needs a value`);
      return v;
    };
    if (arg === "--seconds") options.seconds = positive(arg, value());
    else if (arg === "--root") options.root = path.resolve(value());
    else if (arg === "--out") options.out = path.resolve(value());
    else if (arg === "--keep") options.keep = true;
    else if (arg === "--migrate-current") options.migrateCurrent = true;
    else if (arg === "--idle-source") options.idleSource = loopback(value());
    else if (arg === "--max-rss-gb") options.maxRssGb = positive(arg, value());
    else if (arg.startsWith("--")) throw new Error(`unknown option ${arg}`);
    else names.push(arg);
  }
  return { names, options };
}

function positive(name: string, raw: string): number {
  const n = Number(raw);
  if (!Number.isFinite(n) || n <= 0) throw new Error(`${name} must be a positive number`);
  return n;
}

/** Soak traffic never leaves the machine. */
function loopback(address: string): string {
  if (!/^127\.\d{1,3}\.\d{1,3}\.\d{1,3}$/.test(address)) throw new Error(`--idle-source must be a loopback address (127.x.y.z), not ${address}`);
  return address;
}
