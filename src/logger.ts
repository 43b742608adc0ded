import { pino } from "pino";
import { logLevel } from "./config.js";

/**
 * Structured JSON logs on stdout. Authorization headers, API keys, JWTs and request bodies are
 * never passed to the logger; the redact list is a second line of defence. Writes are
 * asynchronous and gathered: a write per line, each a round trip to libuv's thread pool, cost the
 * API more CPU than some of its requests' own work (bench/README.md, "overhead"). Lines wait at
 * most a quarter of a second, and are flushed on exit.
 */
const destination = pino.destination({ dest: 1, sync: false, minLength: 4096, periodicFlush: 250 });
export const logger = pino({
  level: logLevel(),
  redact: ["req.headers.authorization", "headers.authorization", "authorization", "secret", "apiKey", "token"],
  hooks: {
    // An error's line is written at once, with what waits before it: it may be the last before a crash.
    logMethod(args, method, level) {
      method.apply(this, args);
      if (level >= 50) {
        try {
          destination.flush();
        } catch {
          // closed at exit: flushLogs wrote what there was
        }
      }
    },
  },
}, destination);

/** Writes what is buffered: before process.exit, which would drop it. */
export const flushLogs = () => {
  try {
    destination.flushSync();
  } catch {
    // not open yet (nothing written): nothing to flush
  }
};
process.once("exit", flushLogs);
