import type { IncomingMessage, ServerResponse } from "node:http";
import parseurl from "parseurl";

/**
 * The request and response as Node gives them, with the parsed body the API's steps add (what
 * else one step tells the next is in the request's scope, src/http/request-scope.ts). The
 * /graphql steps use only these, so that they run without Express, whose swap of every
 * request's and response's prototype costs more than the rest of a small request
 * (bench/README.md, "overhead"); Express's routes can use them too.
 */
export interface HttpRequest extends IncomingMessage { body?: unknown }
export type HttpResponse = ServerResponse;
export type Next = (err?: unknown) => void;
export type Step = (req: HttpRequest, res: HttpResponse, next: Next) => unknown;

/** A JSON answer, as Express's `res.status(status).json(body)` writes it. */
export function sendJson(res: ServerResponse, status: number, body: unknown): void {
  const text = JSON.stringify(body);
  res.statusCode = status;
  res.setHeader("Content-Type", "application/json; charset=utf-8");
  res.setHeader("Content-Length", Buffer.byteLength(text));
  res.end(text);
}

/** A request header as one string (Express's `req.get`). */
export function headerOf(req: IncomingMessage, name: string): string | undefined {
  const value = req.headers[name.toLowerCase()];
  return Array.isArray(value) ? value.join(", ") : value;
}

/** The request's path, as Express reads it (parseurl). */
export const pathOf = (req: IncomingMessage): string => parseurl(req)?.pathname ?? "/";

/** Whether the body is declared JSON (Express's `req.is("application/json")`). */
export function isJsonBody(req: IncomingMessage): boolean {
  const type = req.headers["content-type"];
  return typeof type === "string" && type.split(";")[0].trim().toLowerCase() === "application/json";
}
