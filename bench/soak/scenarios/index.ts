import type { Scenario } from "../harness.js";
import { cliLarge } from "./cli-large.js";
import { imapEndless } from "./imap-endless.js";
import { killWorker } from "./kill-worker.js";
import { names } from "./names.js";
import { s3Endless } from "./s3-endless.js";
import { slowSources } from "./slow-sources.js";
import { smtpHtml } from "./smtp-html.js";
import { smtpIdle } from "./smtp-idle.js";
import { uploads } from "./uploads.js";

/** Every soak scenario, in the order `soak all` runs them (issue 32's items). */
export const scenarios: Scenario<any>[] = [imapEndless, smtpHtml, s3Endless, slowSources, killWorker, smtpIdle, uploads, cliLarge, names];
