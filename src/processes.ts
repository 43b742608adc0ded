import { readFileSync } from "node:fs";

/**
 * What Linux says of other processes (/proc): enough to tell whether a process we depend on or
 * left behind is still the one we knew. Elsewhere every answer is "none".
 */

function readProc(file: string): string {
  try {
    return readFileSync(file, "utf8");
  } catch {
    return "";
  }
}

/** Fields of /proc/<pid>/stat after the command name: state, ppid, …; the start time is the 20th. */
function statFields(pid: number): string[] {
  return readProc(`/proc/${pid}/stat`).replace(/^.*\) /s, "").split(" ");
}

/** The command line of a live process, or "" when there is none. */
export function commandOf(pid: number): string {
  return readProc(`/proc/${pid}/cmdline`).replace(/\0/g, " ");
}

export function parentOf(pid: number): number | undefined {
  const ppid = Number(statFields(pid)[1]);
  return Number.isInteger(ppid) && ppid > 0 ? ppid : undefined;
}

/** When the process started ("gone" once it has exited: a zombie is as gone as a reaped one). */
export function startTimeOf(pid: number): string {
  const fields = statFields(pid);
  return fields[0] === "Z" ? "gone" : (fields[19] ?? "gone");
}
