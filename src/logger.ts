import { pino } from "pino";

/**
 * Structured JSON logs. Authorization headers, API keys, JWTs and request bodies are never
 * passed to the logger; the redact list is a second line of defence.
 */
export const logger = pino({
  level: process.env.LOG_LEVEL ?? (process.env.NODE_ENV === "test" ? "silent" : "info"),
  redact: ["req.headers.authorization", "headers.authorization", "authorization", "secret", "apiKey", "token"],
});
