import net from "node:net";
import tls from "node:tls";
import { ImapFlow } from "imapflow";
import { afterAll, beforeAll, describe, expect, it, vi } from "vitest";
import { closeSandbox } from "../src/receipts/sandbox/index.js";
import { testMailbox } from "../src/sources/mailbox/connection.js";
import { runCli } from "./helpers/cli.js";
import { dovecotAvailable, startDovecot, type Dovecot } from "./helpers/dovecot.js";
import { runJobs } from "./helpers/worker.js";
import { createTenant, dataOf, errorOf, gqlTo, startHarness, type Harness, type Tenant } from "./helpers/harness.js";
import { until } from "./helpers/until.js";
import { rawMessage, receiptPdf } from "./helpers/receipt-files.js";
import { importBankLines } from "./ledger-fixtures.js";

/**
 * Mailboxes as receipt sources (docs/api.md, Receipt sources), against a real IMAP server (dovecot)
 * started here on loopback: connecting tests the login, scans read attachments into receipts
 * without marking anything read, and a mailbox that fails is marked and retried without stopping
 * others.
 */
const MAILBOX = `id host port secure username folder status lastError lastScannedAt created`;
const CONNECT = `mutation($o: UUID!, $host: String!, $port: Int, $secure: Boolean, $user: String!, $pw: String!, $folder: String) {
  connectMailbox(organizationId: $o, host: $host, port: $port, secure: $secure, username: $user, password: $pw, folder: $folder) {
    success error mailbox { ${MAILBOX} } } }`;
const LIST = `query($o: UUID!) { listMailboxes(organizationId: $o) { ${MAILBOX} } }`;
const SYNC = `mutation($o: UUID!, $m: UUID!) { syncMailbox(organizationId: $o, mailboxId: $m) { success error scanId } }`;
const DISCONNECT = `mutation($o: UUID!, $m: UUID!) { disconnectMailbox(organizationId: $o, mailboxId: $m) { success error } }`;

const ALICE_PASSWORD = "alice-Pa55word-in-clear";
const BOB_PASSWORD = "bob-Pa55word-in-clear";

// .ci/run installs dovecot; elsewhere these tests are skipped, with the reason, when it is missing.
const hasDovecot = dovecotAvailable();
if (!hasDovecot && process.env.CI) throw new Error("dovecot is required in CI (apt-get install dovecot-imapd).");
if (!hasDovecot) console.warn("mailboxes.test.ts: dovecot is not installed (apt-get install dovecot-imapd): its tests are skipped.");
const it_ = hasDovecot ? it : it.skip;
let h: Harness;
let t: Tenant;
let dovecot: Dovecot;

beforeAll(async () => {
  if (!hasDovecot) return;
  h = await startHarness({ outboundAllowLoopback: true });
  t = await createTenant(h);
  dovecot = await startDovecot();
  await dovecot.setUser("alice", ALICE_PASSWORD);
  await dovecot.setUser("bob", BOB_PASSWORD);
});
afterAll(async () => {
  await closeSandbox();
  await dovecot?.stop();
  await h?.close();
});

const connect = (vars: Record<string, unknown>, credential = t.ownerJwt) =>
  h.gql(CONNECT, { o: t.organizationId, host: "127.0.0.1", port: dovecot.port, secure: false, ...vars }, credential);

/** Puts a message in a user's INBOX with IMAP APPEND, as a mail server would deliver it. */
async function deliver(user: string, password: string, mail: Parameters<typeof rawMessage>[0]) {
  const client = new ImapFlow({ host: "127.0.0.1", port: dovecot.port, secure: false, auth: { user, pass: password }, logger: false });
  await client.connect();
  await client.append("INBOX", await rawMessage(mail));
  await client.logout();
}

/** The flags of every message in a user's INBOX. */
async function flagsOf(user: string, password: string): Promise<string[][]> {
  const client = new ImapFlow({ host: "127.0.0.1", port: dovecot.port, secure: false, auth: { user, pass: password }, logger: false });
  await client.connect();
  await client.mailboxOpen("INBOX", { readOnly: true });
  const messages = await client.fetchAll("1:*", { flags: true });
  await client.logout();
  return messages.map((m) => [...(m.flags ?? [])]);
}

/** Every job the worker has, run until none is left (scans, then extraction and matching). */
const work = () => runJobs(h);

const scansOf = async (mailboxId: string) => (await h.owner.query(
  `select status, result, error from app_private.job_results
    where job_name = 'scan_mailbox' and payload->>'receiptSourceId' = $1 order by id`, [mailboxId])).rows;

const mailboxReceipts = async () => (await h.owner.query(
  `select r.status, r.match_status, r.vendor_name, r.amount::text, r.filename, e.merchant_name
     from app_public.receipts r left join app_public.ledger_events e on e.id = r.event_id
    where r.organization_id = $1 and r.source = 'mailbox' order by r.filename`, [t.organizationId])).rows;

describe("connectMailbox", () => {
  it_("refuses a wrong password with a clear error and stores nothing; API keys and members may not connect", async () => {
    const wrong = dataOf(await connect({ user: "alice", pw: "not-the-password" }), "connectMailbox");
    expect(wrong).toEqual({ success: false, mailbox: null,
      error: `The mailbox server 127.0.0.1:${dovecot.port} refused the login: check the username and password.` });
    expect(wrong.error).not.toContain("not-the-password");

    const closed = dataOf(await connect({ port: 1, user: "alice", pw: ALICE_PASSWORD }), "connectMailbox");
    expect(closed).toMatchObject({ success: false, error: "Could not connect to 127.0.0.1:1: the connection was refused." });

    const noFolder = dataOf(await connect({ user: "alice", pw: ALICE_PASSWORD, folder: "Receipts" }), "connectMailbox");
    expect(noFolder).toMatchObject({ success: false, error: `The folder "Receipts" does not exist in this mailbox.` });

    expect(errorOf(await connect({ user: "alice", pw: ALICE_PASSWORD }, t.apiKey)).message).toBe("API Keys Cannot Perform Admin Operations.");
    expect(dataOf(await connect({ user: "alice", pw: "" }), "connectMailbox")).toMatchObject({ success: false, error: "Password is required." });
    expect(dataOf(await connect({ host: "bad host!", user: "alice", pw: ALICE_PASSWORD }), "connectMailbox"))
      .toMatchObject({ success: false, error: "Host must be a host name or an IP address." });

    expect((await h.owner.query("select count(*)::int n from app_public.receipt_sources")).rows[0].n).toBe(0);
  });

  it_("refuses a server whose certificate is not trusted, over TLS and over STARTTLS", async () => {
    const selfSigned = await startDovecot({ tls: true });
    try {
      await selfSigned.setUser("alice", ALICE_PASSWORD);
      for (const [port, secure] of [[selfSigned.tlsPort, true], [selfSigned.port, false]] as const) {
        const untrusted = dataOf(await connect({ port, secure, user: "alice", pw: ALICE_PASSWORD }), "connectMailbox");
        expect(untrusted).toEqual({ success: false, mailbox: null, error: `The secure connection to 127.0.0.1:${port} failed: self-signed certificate.` });
      }
    } finally {
      await selfSigned.stop();
    }
    expect((await h.owner.query("select count(*)::int n from app_public.receipt_sources")).rows[0].n).toBe(0);
  });
});

describe("a mailbox scanned by the worker", () => {
  let mailboxId: string;

  it_("turns the two messages with receipt attachments into receipts, skips the newsletter, and leaves every message unread", async () => {
    expect(await importBankLines(h, t, [
      { transactionDate: "2026-11-02", description: "NORTHWIND OFFICE SUPPLY", amount: "-54.20", eventType: "expense" },
      { transactionDate: "2026-11-04", description: "BLUE HERON BAKERY", amount: "-18.75", eventType: "expense" },
    ])).toMatchObject({ success: true });

    await deliver("alice", ALICE_PASSWORD, {
      from: "Northwind <billing@northwind.example>", to: "alice@example.test", subject: "Your invoice", messageId: "<inv-1@northwind.example>",
      text: "Invoice attached.", attachments: [{ filename: "northwind.pdf",
        content: await receiptPdf(["NORTHWIND OFFICE SUPPLY", "Date: 2026-11-01", "Paper      54.20", "TOTAL      54.20"]) }],
    });
    await deliver("alice", ALICE_PASSWORD, {
      from: "News <news@shop.example>", to: "alice@example.test", subject: "This week's deals", messageId: "<news-1@shop.example>",
      text: "Deals!", html: "<p>Deals!</p>",
    });
    await deliver("alice", ALICE_PASSWORD, {
      from: "Blue Heron <hello@blueheron.example>", to: "alice@example.test", subject: "Receipt", messageId: "<r-77@blueheron.example>",
      text: "Thanks!", attachments: [{ filename: "blue-heron.pdf",
        content: await receiptPdf(["BLUE HERON BAKERY", "Date: 2026-11-04", "Croissants  18.75", "TOTAL      18.75"]) }],
    });

    const connected = dataOf(await connect({ user: "alice", pw: ALICE_PASSWORD }), "connectMailbox");
    expect(connected).toMatchObject({ success: true, error: null, mailbox: {
      host: "127.0.0.1", port: dovecot.port, secure: false, username: "alice", folder: "INBOX", status: "connected", lastError: null, lastScannedAt: null } });
    mailboxId = connected.mailbox.id;

    // Scan, extraction, matching: a job that failed under load is retried a few seconds later
    // (graphile-worker's backoff), so the jobs run until both receipts are past matching.
    await until("both receipts matched or refused", async () => {
      await work();
      const receipts = await mailboxReceipts();
      return receipts.length === 2 && receipts.every((r) => r.match_status !== "pending");
    });
    expect(await mailboxReceipts()).toEqual([
      { status: "processed", match_status: "matched", vendor_name: "BLUE HERON BAKERY", amount: "18.75", filename: "blue-heron.pdf", merchant_name: "BLUE HERON BAKERY" },
      { status: "processed", match_status: "matched", vendor_name: "NORTHWIND OFFICE SUPPLY", amount: "54.20", filename: "northwind.pdf", merchant_name: "NORTHWIND OFFICE SUPPLY" },
    ]);
    expect(await scansOf(mailboxId)).toEqual([{ status: "succeeded", error: null,
      result: { receiptSourceId: mailboxId, scanned: 3, created: 2, duplicates: 0, refused: 0, skipped: 1, failed: 0, more: false } }]);
    expect(await flagsOf("alice", ALICE_PASSWORD)).toHaveLength(3);
    expect((await flagsOf("alice", ALICE_PASSWORD)).flat()).not.toContain("\\Seen");
    const [listed] = dataOf(await h.gql(LIST, { o: t.organizationId }, t.ownerJwt), "listMailboxes");
    expect(listed).toMatchObject({ id: mailboxId, status: "connected", lastError: null });
    expect(listed.lastScannedAt).toMatch(/^\d{4}-\d\d-\d\dT/);
  });

  it_("creates nothing on a second scan, and picks up a message delivered later", async () => {
    const sync = dataOf(await h.gql(SYNC, { o: t.organizationId, m: mailboxId }, t.ownerJwt), "syncMailbox");
    expect(sync).toMatchObject({ success: true, error: null });
    expect(sync.scanId).toMatch(/^\d+$/);
    await work();
    expect((await scansOf(mailboxId)).at(-1)).toMatchObject({ status: "succeeded", result: { scanned: 0, created: 0 } });
    expect(await mailboxReceipts()).toHaveLength(2);

    await deliver("alice", ALICE_PASSWORD, {
      from: "Cab Co <rides@cab.example>", to: "alice@example.test", subject: "Your ride", messageId: "<ride-9@cab.example>",
      text: "Receipt attached.", attachments: [{ filename: "ride.pdf", content: await receiptPdf(["CITY CAB CO", "Date: 2026-11-05", "TOTAL 23.10"]) }],
    });
    dataOf(await h.gql(SYNC, { o: t.organizationId, m: mailboxId }, t.ownerJwt), "syncMailbox");
    await work();
    expect((await scansOf(mailboxId)).at(-1)).toMatchObject({ status: "succeeded", result: { scanned: 1, created: 1 } });
    expect((await mailboxReceipts()).map((r) => r.filename)).toEqual(["blue-heron.pdf", "northwind.pdf", "ride.pdf"]);
    expect((await flagsOf("alice", ALICE_PASSWORD)).flat()).not.toContain("\\Seen");
  });

  it_("marks a mailbox whose password changed as error, and goes on with the others", async () => {
    const bob = dataOf(await connect({ user: "bob", pw: BOB_PASSWORD }), "connectMailbox");
    expect(bob.success).toBe(true);
    await dovecot.setUser("alice", "a-new-password-set-elsewhere");
    dataOf(await h.gql(SYNC, { o: t.organizationId, m: mailboxId }, t.ownerJwt), "syncMailbox");
    await work();

    const listed = dataOf(await h.gql(LIST, { o: t.organizationId }, t.ownerJwt), "listMailboxes");
    expect(listed.map((m: any) => [m.username, m.status, m.lastError])).toEqual([
      ["alice", "error", `The mailbox server 127.0.0.1:${dovecot.port} refused the login: check the username and password.`],
      ["bob", "connected", null],
    ]);
    expect((await scansOf(mailboxId)).at(-1)).toMatchObject({ status: "failed", error: expect.stringContaining("refused the login") });
    expect((await scansOf(bob.mailbox.id))).toMatchObject([{ status: "succeeded", result: { scanned: 0 } }]);
    // Retried with backoff: not due again for a minute, and later each time.
    const { rows: [state] } = await h.owner.query(
      "select failures, next_scan_at > now() + interval '50 seconds' as later from app_public.receipt_sources where id = $1", [mailboxId]);
    expect(state).toEqual({ failures: 1, later: true });
  });

  it_("skips a message whose id and file name carry a NUL, and goes on with the next", async () => {
    await dovecot.setUser("dave", "dave-Pa55word");
    const raw = async (id: string, filename: string) => Buffer.from([
      "From: shop@nul.example", "To: dave@example.test", "Subject: receipt", `Message-ID: ${id}`, "MIME-Version: 1.0",
      'Content-Type: multipart/mixed; boundary="b"', "", "--b", "Content-Type: text/plain", "", "Attached.", "--b",
      `Content-Type: application/pdf; name="${filename}"`, `Content-Disposition: attachment; filename="${filename}"`,
      "Content-Transfer-Encoding: base64", "", (await receiptPdf(["NUL SHOP", id.replace(/\W/g, ""), "TOTAL 3.00"])).toString("base64"),
      "--b--", ""].join("\r\n"), "latin1");
    const client = new ImapFlow({ host: "127.0.0.1", port: dovecot.port, secure: false, auth: { user: "dave", pass: "dave-Pa55word" }, logger: false });
    await client.connect();
    await client.append("INBOX", await raw("<nul\u0000id@nul.example>", "bad\u0000name.pdf"));
    await client.append("INBOX", await raw("<fine@nul.example>", "fine.pdf"));
    await client.logout();
    const dave = dataOf(await connect({ user: "dave", pw: "dave-Pa55word" }), "connectMailbox");
    await work();
    expect(await scansOf(dave.mailbox.id)).toMatchObject([{ status: "succeeded", result: { scanned: 2 } }]);
    const { rows } = await h.owner.query("select filename from app_public.receipts where organization_id = $1 and filename like '%name.pdf' or filename = 'fine.pdf' order by filename",
      [t.organizationId]);
    expect(rows.map((r) => r.filename).sort()).toEqual(["badname.pdf", "fine.pdf"]);
    dataOf(await h.gql(DISCONNECT, { o: t.organizationId, m: dave.mailbox.id }, t.ownerJwt), "disconnectMailbox");
  });

  it_("never reads what is older than 30 days, even when the first scan found nothing newer", async () => {
    await dovecot.setUser("carol", "carol-Pa55word");
    const old = { from: "Old Shop <o@old.example>", to: "carol@example.test", subject: "Old receipt", messageId: "<old-1@old.example>",
      text: "Attached.", attachments: [{ filename: "old.pdf", content: await receiptPdf(["OLD SHOP", "TOTAL 5.00"]) }] };
    const client = new ImapFlow({ host: "127.0.0.1", port: dovecot.port, secure: false, auth: { user: "carol", pass: "carol-Pa55word" }, logger: false });
    await client.connect();
    await client.append("INBOX", await rawMessage(old), [], new Date(Date.now() - 60 * 86_400_000));
    await client.logout();
    const carol = dataOf(await connect({ user: "carol", pw: "carol-Pa55word" }), "connectMailbox");
    await work();
    dataOf(await h.gql(SYNC, { o: t.organizationId, m: carol.mailbox.id }, t.ownerJwt), "syncMailbox");
    await work();
    expect((await scansOf(carol.mailbox.id)).map((s) => s.result.scanned)).toEqual([0, 0]);
    dataOf(await h.gql(DISCONNECT, { o: t.organizationId, m: carol.mailbox.id }, t.ownerJwt), "disconnectMailbox");
  });

  it_("never holds a password in clear in any table, and the API's role cannot read the sealed one", async () => {
    const { rows: tables } = await h.owner.query<{ name: string }>(
      `select format('%I.%I', schemaname, tablename) as name from pg_tables where schemaname not in ('pg_catalog', 'information_schema')`);
    expect(tables.length).toBeGreaterThan(20);
    for (const password of [ALICE_PASSWORD, BOB_PASSWORD, "not-the-password", "carol-Pa55word"]) {
      const found: string[] = [];
      for (const { name } of tables) {
        const { rows: [{ n }] } = await h.owner.query(`select count(*)::int n from ${name} t where strpos(t::text, $1) > 0`, [password]);
        if (n > 0) found.push(name);
      }
      expect(found, password).toEqual([]);
    }
    const { rows: [grant] } = await h.owner.query(
      "select has_column_privilege('accounting_visitor', 'app_public.receipt_sources', 'secret_sealed', 'select') as readable");
    expect(grant.readable).toBe(false);
  });

  it_("shows each scan to the operator (list_scans), and disconnecting removes the mailbox but keeps its receipts", async () => {
    const cli = await runCli(h.databaseUrl, "list_scans", "--org-name", t.name, "--json");
    expect(cli.code).toBe(0);
    const scans = cli.json.scans.filter((s: any) => s.receiptSourceId === mailboxId);
    expect(scans.map((s: any) => [s.status, s.scanned, s.created, s.skipped])).toEqual([
      ["failed", 0, 0, 0], ["succeeded", 1, 1, 0], ["succeeded", 0, 0, 0], ["succeeded", 3, 2, 1]]);
    expect(scans[0]).toMatchObject({ kind: "mailbox", source: "alice@127.0.0.1/INBOX", error: expect.stringContaining("refused the login") });
    expect(scans[3].startedAt <= scans[3].finishedAt).toBe(true);
    const text = await runCli(h.databaseUrl, "list_scans", "--org-name", t.name);
    expect(text.stdout).toContain("alice@127.0.0.1/INBOX");

    expect(dataOf(await h.gql(DISCONNECT, { o: t.organizationId, m: mailboxId }, t.ownerJwt), "disconnectMailbox")).toEqual({ success: true, error: null });
    expect(dataOf(await h.gql(DISCONNECT, { o: t.organizationId, m: mailboxId }, t.ownerJwt), "disconnectMailbox"))
      .toEqual({ success: false, error: "Mailbox not found." });
    expect(dataOf(await h.gql(LIST, { o: t.organizationId }, t.ownerJwt), "listMailboxes").map((m: any) => m.username)).toEqual(["bob"]);
    expect(await mailboxReceipts()).toHaveLength(5); // alice's three and dave's two
  });
});

describe("the outbound guard on mailbox hosts", () => {
  it_("refuses private, metadata and loopback hosts before any connection is attempted", async () => {
    const strict = await h.secondApp({ outboundAllowLoopback: false });
    const connectVia = (host: string) => gqlTo(strict, CONNECT, { o: t.organizationId, host, port: 993, user: "alice", pw: ALICE_PASSWORD }, t.ownerJwt);
    const netConnect = vi.spyOn(net, "connect");
    const netCreate = vi.spyOn(net, "createConnection");
    const tlsConnect = vi.spyOn(tls, "connect");
    try {
      const refusals = [];
      for (const host of ["10.0.0.1", "169.254.169.254", "127.0.0.1", "[::1]"]) {
        refusals.push(dataOf(await connectVia(host), "connectMailbox").error);
      }
      expect(refusals).toEqual([
        "The host 10.0.0.1 is not allowed: 10.0.0.1 is a private address.",
        "The host 169.254.169.254 is not allowed: 169.254.169.254 is a link-local (cloud metadata) address.",
        "The host 127.0.0.1 is not allowed: 127.0.0.1 is a loopback address.",
        "The host ::1 is not allowed: ::1 is a loopback address.",
      ]);
      // A name is resolved once, and refused for its private address (the resolver is stubbed).
      const resolve = vi.fn(async () => [{ address: "10.20.30.40", family: 4 }]);
      expect(await testMailbox({ host: "mail.attacker.example", port: 993, secure: true, username: "u", folder: "INBOX" }, "pw",
        { allowLoopback: false, resolve })).toBe("The host mail.attacker.example is not allowed: 10.20.30.40 is a private address.");
      expect(resolve).toHaveBeenCalledTimes(1);
      // The only sockets opened are the test's own requests to the app, never to port 993.
      const toMailServers = [...netConnect.mock.calls, ...netCreate.mock.calls, ...tlsConnect.mock.calls]
        // By the port itself: a test request's ephemeral port may have 993 among its digits.
        .filter((args) => args[0] === 993 || Number((args[0] as { port?: unknown } | null)?.port) === 993);
      expect(toMailServers).toEqual([]);
      expect(netConnect.mock.calls.length + netCreate.mock.calls.length).toBeGreaterThan(0); // the spies see sockets
    } finally {
      vi.restoreAllMocks();
    }
    expect((await h.owner.query("select count(*)::int n from app_public.receipt_sources where settings->>'port' = '993'")).rows[0].n).toBe(0);
  });
});
