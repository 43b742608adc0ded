import { createRequire } from "node:module";
import { pathToFileURL } from "node:url";

/**
 * The execArgv of a child process that runs one of our TypeScript files (`entry`) under the same
 * loader as this process, with a V8 heap of `heapMb`: past it the child dies, not this process.
 * Under `tsx` the loader flags are in process.execArgv (`--require …/tsx/dist/preflight.cjs
 * --import …/tsx/dist/loader.mjs`) and are passed on; elsewhere (vitest transforms modules
 * itself) tsx's loader is added.
 */
export function typescriptChildExecArgv(entry: string, heapMb: number): string[] {
  const kept: string[] = [];
  const args = process.execArgv;
  for (let i = 0; i < args.length; i++) {
    const arg = args[i];
    if ((arg === "--import" || arg === "--require" || arg === "-r") && /[/\\]tsx[/\\]|^tsx(\/|$)/.test(args[i + 1] ?? "")) {
      kept.push(arg, args[++i]);
    } else if (/^--(import|require)=.*tsx/.test(arg)) {
      kept.push(arg);
    }
  }
  if (!kept.some((arg) => /^--import(=|$)/.test(arg))) kept.push(...tsxLoaderArgs(entry));
  return [...kept, `--max-old-space-size=${heapMb}`];
}

/** tsx's loader for `entry` when it is a TypeScript file (a worker thread takes no more of this process's flags). */
export function tsxLoaderArgs(entry: string): string[] {
  if (!entry.endsWith(".ts")) return [];
  return ["--import", pathToFileURL(createRequire(import.meta.url).resolve("tsx")).href];
}
