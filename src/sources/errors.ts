/**
 * A source (a mailbox, a cloud drive) that cannot be reached or read as configured: the message
 * is for the person who connected it, and never holds the secret.
 */
export class SourceError extends Error {}

/**
 * A tenant's server past what one answer may take (mailbox/ and cloud-drive/answer-limits.ts):
 * `server` names it ("The mailbox server host:993"), `what` the request ("the list of messages").
 */
export const answerTooLarge = (server: string, what: string, maxBytes: number) =>
  new SourceError(`${server} sent more than ${Math.round(maxBytes / (1024 * 1024))} MB in answer to one request (${what}) and was cut off.`);
export const answerTooSlow = (server: string, what: string, ms: number) =>
  new SourceError(`${server} did not finish answering a request (${what}) within ${ms / 1000} s and was cut off.`);

/** Any error's message with every occurrence of the secret blanked out, at most 500 characters. */
export function withoutSecret(message: string, secret: string): string {
  const clean = secret.length >= 3 ? message.split(secret).join("***") : message;
  return clean.length > 500 ? clean.slice(0, 497) + "..." : clean;
}

/** What a network error says, in words, for `host:port`; null when it is no network error. */
export function networkFailure(e: unknown, where: string, timeoutSeconds: number): string | null {
  const code = (e as NodeJS.ErrnoException | null)?.code ?? "";
  if (code === "EOUTBOUNDREFUSED") return (e as Error).message;
  if (code === "ECONNREFUSED") return `Could not connect to ${where}: the connection was refused.`;
  if (code === "ECONNRESET" || code === "EPIPE") return `The connection to ${where} was closed by the server.`;
  if (code === "EHOSTUNREACH" || code === "ENETUNREACH") return `Could not connect to ${where}: the host is unreachable.`;
  if (["ETIMEDOUT", "ETIMEOUT", "CONNECT_TIMEOUT", "GREETING_TIMEOUT", "UPGRADE_TIMEOUT", "TimeoutError"].includes(code)
      || (e as Error | null)?.name === "TimeoutError") {
    return `${where} did not answer within ${timeoutSeconds} s.`;
  }
  if (/^(ERR_TLS_|ERR_SSL_|CERT_|UNABLE_TO_|DEPTH_ZERO_|SELF_SIGNED_)/.test(code) || code === "EPROTO") {
    return `The secure connection to ${where} failed: ${(e as Error).message}.`;
  }
  return null;
}

/**
 * A time limit on all of a scan or a connection test: socket timeouts only catch a silent
 * server, not one that trickles a byte at a time. `signal` aborts when it passes (the caller
 * closes its client then); `expired(e)` is the error to report for whatever failed because of it.
 * `pastSoft()`: the time to stop taking new work has come (at `softMs`), so that a slow but honest
 * server's scan ends with `more` rather than cut off. `cancel(why)` ends it early (the source was
 * disconnected): `signal` aborts and `expired` answers `why`.
 */
export function deadline(ms: number, what: string, softMs = ms) {
  const controller = new AbortController();
  const reason = new SourceError(`${what} did not finish within ${Math.round(ms / 1000)} s and was stopped.`);
  const timer = setTimeout(() => controller.abort(reason), ms);
  timer.unref();
  const soft = Date.now() + softMs;
  return {
    signal: controller.signal,
    pastSoft: () => Date.now() >= soft,
    /** The deadline's error when it has passed (whatever `e` says), else `e`. */
    expired: (e: unknown): unknown => (controller.signal.aborted ? controller.signal.reason : e),
    cancel: (why: SourceError) => {
      clearTimeout(timer);
      controller.abort(why);
    },
    clear: () => clearTimeout(timer),
  };
}
export type Deadline = ReturnType<typeof deadline>;
