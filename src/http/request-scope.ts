import { AsyncLocalStorage } from "node:async_hooks";
import { randomUUID } from "node:crypto";
import type { ServerResponse } from "node:http";
import type { DocumentNode, OperationDefinitionNode } from "postgraphile/graphql";
import type { CallerDb, Callers } from "../db/caller.js";
import { ANONYMOUS, type Identity } from "../db/identity.js";
import type { HttpRequest, HttpResponse, Next } from "./node-http.js";

/** The operation the gate admitted: what later steps run, count and draw on. */
export interface AdmittedOperation {
  document: DocumentNode;
  operation: OperationDefinitionNode;
  /** The metrics' label: a root field's name, `multiple` or `none` (names of the schema only: a closed set). */
  label: string;
  /** The organization its root fields name, when they name exactly one: whose share it waits in. */
  organization?: string;
}

/**
 * What one request is, as its steps learn it: made first, filled in once by the step that knows
 * (authentication the identity, the gate the operation), read by every step after. Nothing else
 * carries request state. The database access of an admitted request is opened once, at its first
 * use: its time budget starts there (an Idempotency-Key's claim before it takes none of it, a
 * replayed answer opens none).
 */
export class RequestScope {
  readonly requestId = randomUUID();
  /** Errors the answer told (its outcome in the metrics). */
  errors = 0;
  /** Bytes of the JSON body, once read. */
  bodyBytes = 0;
  private who: Identity = ANONYMOUS;
  private isAdmitted = false;
  private admitted?: AdmittedOperation;
  private access?: CallerDb;

  constructor(private readonly callers: Callers) {}

  get identity(): Identity {
    return this.who;
  }

  /** The verified identity (authentication's, once, before anything uses the database). */
  authenticated(identity: Identity): void {
    if (this.who !== ANONYMOUS || this.admitted || this.access) throw new Error("a request's identity is set once, before it is admitted");
    this.who = identity;
  }

  get operation(): AdmittedOperation | undefined {
    return this.admitted;
  }

  /** The operation the gate admitted (none: no operation of the document is to run). */
  admit(operation: AdmittedOperation | undefined): void {
    if (this.isAdmitted) throw new Error("a request is admitted once");
    this.isAdmitted = true;
    this.admitted = operation;
  }

  /** The request's database access (GraphQL's, a direct read's): only an admitted request has one. */
  get db(): CallerDb {
    if (!this.isAdmitted) throw new Error("a request reached the database before the gate admitted it");
    return (this.access ??= this.callers.open(this.who, this.admitted?.organization));
  }

  /** Whether the request ran out of its time budget. */
  get timedOut(): boolean {
    return this.access?.timedOut ?? false;
  }

  /**
   * Database access as the caller for one step of a request outside GraphQL (an upload names its
   * organization in its form, then stores a file between its two steps): the organization's share
   * and a budget of the step's own, which `timedOut` does not follow.
   */
  stepDb(organization: string): CallerDb {
    if (this.who === ANONYMOUS) throw new Error("database access as the caller needs an authenticated caller");
    return this.callers.open(this.who, organization);
  }
}

/**
 * The scope rides on the response under a symbol of this module's, which nothing else can reach:
 * a WeakMap would do the same, at the cost of an ephemeron for the collector per request.
 */
const SCOPE = Symbol("request scope");
type Scoped = ServerResponse & { [SCOPE]?: RequestScope };
const current = new AsyncLocalStorage<RequestScope>();

/** The scope of the request this response answers. */
export function scopeOf(res: ServerResponse): RequestScope {
  const scope = (res as Scoped)[SCOPE];
  if (!scope) throw new Error("a request step ran before requestScope");
  return scope;
}

export const currentRequestId = (): string => current.getStore()?.requestId ?? randomUUID();

/** Counts an error told in the current request's answer (its outcome in the metrics). */
export function noteErrorToCaller(): void {
  const scope = current.getStore();
  if (scope) scope.errors++;
}

/**
 * The first step of every request: its scope, its id echoed as X-Request-Id (every log line and
 * masked error carries it), and the scope as the current one wherever its work goes.
 */
export function requestScope(callers: Callers) {
  return (_req: HttpRequest, res: HttpResponse, next: Next) => {
    const scope = new RequestScope(callers);
    (res as Scoped)[SCOPE] = scope;
    res.setHeader("X-Request-Id", scope.requestId);
    current.run(scope, next);
  };
}
