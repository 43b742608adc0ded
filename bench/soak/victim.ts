import { createServer, type Server } from "node:http";
import type { AddressInfo } from "node:net";
import { gql, upload } from "./http.js";
import type { Tenant } from "./tenants.js";

/**
 * What an attack costs the victim organization A: rounds, one after the other, each uploading a
 * tiny text receipt (POST /uploads, createReceipt) and timing it until it leaves `draft`, and
 * making a ledger event and timing its `ledger_event.created` webhook until it reaches a receiver
 * on loopback. The target (issue 32): both within 10 s while another tenant attacks.
 */
export interface Round {
  /** Seconds from the start of the attack (negative: the baseline before it). */
  startedAt: number;
  startedEpoch: number;
  /** From the upload's start to the receipt's leaving `draft`; null when it had not by the end. */
  receiptMs: number | null;
  /** When receiptMs is null: how long it had waited by the end. */
  receiptWaitedMs?: number;
  receiptStatus?: string;
  receiptError?: string;
  /** From createLedgerEvent's start to the webhook's arrival; null when none came by the end. */
  webhookMs: number | null;
  webhookWaitedMs?: number;
  webhookError?: string;
}

export interface VictimFigures {
  baseline: Round | null;
  rounds: Round[];
  /** The longest wait of any round of the attack, finished or not. */
  worstReceiptMs: number | null;
  worstWebhookMs: number | null;
}

const GAP_MS = 10_000;
const POLL_MS = 500;

export class Victim {
  private receiver: Server | undefined;
  private receiverUrl = "";
  private readonly arrivals = new Map<string, number>();
  private readonly waiting = new Map<string, () => void>();
  private readonly rounds: Round[] = [];
  private baselineRound: Round | null = null;
  private readonly stopped = new AbortController();
  private loop: Promise<void> | undefined;
  private attackStart = Date.now();
  private inFlight = 0;
  private stoppedAt: number | undefined;

  constructor(private readonly url: () => string, private readonly org: Tenant) {}

  /** The webhook receiver, and A's endpoint pointing at it. */
  async setup(): Promise<void> {
    this.receiver = createServer((req, res) => {
      const chunks: Buffer[] = [];
      req.on("data", (c: Buffer) => chunks.push(c));
      req.on("end", () => {
        const nonce = /Soak victim ([\w-]+)/.exec(Buffer.concat(chunks).toString("utf8"))?.[1];
        if (nonce && !this.arrivals.has(nonce)) {
          this.arrivals.set(nonce, Date.now());
          this.waiting.get(nonce)?.();
        }
        res.end();
      });
    });
    await new Promise<void>((resolve) => this.receiver!.listen(0, "127.0.0.1", resolve));
    this.receiverUrl = `http://127.0.0.1:${(this.receiver.address() as AddressInfo).port}/hook`;
    const made = await gql(this.url(), this.org.ownerAuth,
      `mutation($o: UUID!, $url: String!) { createWebhookEndpoint(organizationId: $o, url: $url, events: ["ledger_event.created"]) { success error } }`,
      { o: this.org.id, url: this.receiverUrl });
    if (!made.createWebhookEndpoint.success) throw new Error(`webhook endpoint: ${made.createWebhookEndpoint.error}`);
  }

  /** One round before the attack, bounded by 90 s: what A normally waits. */
  async baseline(): Promise<Round> {
    this.attackStart = Date.now();
    const rounds: Round[] = [];
    await this.round(Date.now() + 90_000, rounds);
    this.baselineRound = rounds[0];
    return this.baselineRound;
  }

  /** Rounds' start times are counted from here. */
  markAttackStart(): void {
    this.attackStart = Date.now();
  }

  /** Rounds from `delayMs` after now until `endAt` (or stop()). */
  startRounds(delayMs: number, endAt: number): void {
    this.loop = (async () => {
      await this.pause(delayMs);
      // A round needs time to finish: none starts in the last 15 s.
      while (!this.stopped.signal.aborted && endAt - Date.now() > 15_000) {
        await this.round(endAt, this.rounds);
        await this.pause(GAP_MS);
      }
    })();
  }

  /** Whether a round is under way (a scenario that ends early waits for it). */
  busy(): boolean {
    return this.inFlight > 0;
  }

  async stop(): Promise<void> {
    this.stopped.abort();
    this.stoppedAt = Date.now();
    for (const wake of this.waiting.values()) wake();
    // A request of a round may hang on a frozen server: its round is reported as still waiting.
    await Promise.race([this.loop, new Promise((r) => setTimeout(r, 5_000))]);
    const closed = new Promise<void>((resolve) => this.receiver ? this.receiver.close(() => resolve()) : resolve());
    this.receiver?.closeAllConnections(); // the deliverer's kept-alive connections would hold close()
    await closed;
  }

  figures(): VictimFigures {
    const end = this.stoppedAt ?? Date.now();
    for (const r of [...this.rounds, ...(this.baselineRound ? [this.baselineRound] : [])]) {
      if (r.receiptMs === null && r.receiptWaitedMs === undefined) r.receiptWaitedMs = end - r.startedEpoch;
      if (r.webhookMs === null && r.webhookWaitedMs === undefined) r.webhookWaitedMs = end - r.startedEpoch;
    }
    const worst = (pick: (r: Round) => number | null | undefined) => {
      const values = this.rounds.map(pick).filter((v): v is number => typeof v === "number");
      return values.length ? Math.max(...values) : null;
    };
    return {
      baseline: this.baselineRound,
      rounds: this.rounds,
      worstReceiptMs: worst((r) => r.receiptMs ?? r.receiptWaitedMs),
      worstWebhookMs: worst((r) => r.webhookMs ?? r.webhookWaitedMs),
    };
  }

  /** A round, added to `into` as it starts (so that one cut short by stop() is still reported). */
  private async round(endAt: number, into: Round[]): Promise<void> {
    this.inFlight++;
    const nonce = `${Date.now().toString(36)}-${Math.random().toString(36).slice(2, 8)}`;
    const started = Date.now();
    const round: Round = { startedAt: (started - this.attackStart) / 1000, startedEpoch: started, receiptMs: null, webhookMs: null };
    into.push(round);
    try {
      await Promise.all([this.receipt(nonce, started, endAt, round), this.webhook(nonce, endAt, round)]);
    } finally {
      this.inFlight--;
    }
  }

  private async receipt(nonce: string, started: number, endAt: number, round: Round): Promise<void> {
    const left = () => endAt - Date.now();
    const bytes = Buffer.from(`SOAK CAFE\n2026-05-01\nLatte 4.50\nTOTAL 4.50\nref ${nonce}\n`);
    const up = await upload(this.url(), this.org.apiKey, this.org.id, { name: `coffee-${nonce}.txt`, type: "text/plain", bytes }, Math.max(left(), 1000));
    if (up.status !== 201) {
      round.receiptError = `upload: ${up.status ? `HTTP ${up.status}` : up.error}`;
      round.receiptWaitedMs = Date.now() - started;
      return;
    }
    let receiptId: string | undefined;
    while (!receiptId && left() > 0 && !this.stopped.signal.aborted) {
      try {
        const made = await gql(this.url(), this.org.keyAuth,
          `mutation($o: UUID!, $k: String!) { createReceipt(organizationId: $o, objectKey: $k) { success error receiptId } }`,
          { o: this.org.id, k: up.body.objectKey }, { timeoutMs: Math.min(30_000, Math.max(left(), 1000)) });
        if (!made.createReceipt.success) { round.receiptError = `createReceipt: ${made.createReceipt.error}`; break; }
        receiptId = made.createReceipt.receiptId;
        round.receiptError = undefined;
      } catch (e) {
        round.receiptError = `createReceipt: ${(e as Error).message}`;
        await this.pause(POLL_MS);
      }
    }
    while (receiptId && left() > 0 && !this.stopped.signal.aborted) {
      try {
        const got = await gql(this.url(), this.org.keyAuth,
          `query($o: UUID!, $r: UUID!) { getReceipt(organizationId: $o, receiptId: $r) { status extractionError } }`,
          { o: this.org.id, r: receiptId }, { timeoutMs: Math.min(30_000, Math.max(left(), 1000)) });
        round.receiptStatus = got.getReceipt.status;
        if (got.getReceipt.status !== "draft") {
          round.receiptMs = Date.now() - started;
          if (got.getReceipt.extractionError) round.receiptError = got.getReceipt.extractionError;
          return;
        }
      } catch { /* a poll that timed out: the wait goes on */ }
      await this.pause(POLL_MS);
    }
    round.receiptWaitedMs = Date.now() - started;
  }

  private async webhook(nonce: string, endAt: number, round: Round): Promise<void> {
    const started = Date.now();
    const arrived = new Promise<void>((resolve) => this.waiting.set(nonce, resolve));
    try {
      const made = await gql(this.url(), this.org.keyAuth,
        `mutation($o: UUID!, $m: String!, $d: String!) { createLedgerEvent(organizationId: $o, merchantName: $m, amount: "4.50", transactionDate: $d) { success error } }`,
        { o: this.org.id, m: `Soak victim ${nonce}`, d: new Date().toISOString().slice(0, 10) }, { timeoutMs: Math.max(endAt - Date.now(), 1000) });
      if (!made.createLedgerEvent.success) throw new Error(made.createLedgerEvent.error);
    } catch (e) {
      round.webhookError = `createLedgerEvent: ${(e as Error).message}`;
      round.webhookWaitedMs = Date.now() - started;
      this.waiting.delete(nonce);
      return;
    }
    let timer: NodeJS.Timeout | undefined;
    await Promise.race([arrived, new Promise<void>((resolve) => { timer = setTimeout(resolve, Math.max(endAt - Date.now(), 0)); }),
      new Promise<void>((resolve) => this.stopped.signal.addEventListener("abort", () => resolve(), { once: true }))]);
    clearTimeout(timer);
    this.waiting.delete(nonce);
    const at = this.arrivals.get(nonce);
    if (at !== undefined) round.webhookMs = at - started;
    else round.webhookWaitedMs = Date.now() - started;
  }

  private pause(ms: number): Promise<void> {
    return new Promise((resolve) => {
      if (this.stopped.signal.aborted) return resolve();
      const timer = setTimeout(resolve, ms);
      this.stopped.signal.addEventListener("abort", () => { clearTimeout(timer); resolve(); }, { once: true });
    });
  }
}
