import { execFileSync, spawnSync } from "node:child_process";
import { chmodSync, chownSync, existsSync, mkdirSync, mkdtempSync, readFileSync, rmSync, utimesSync, writeFileSync } from "node:fs";
import net from "node:net";
import os from "node:os";
import path from "node:path";
import { setTimeout as sleep } from "node:timers/promises";
import { freePort } from "./ports.js";

/**
 * A real IMAP server for tests: Debian's dovecot (installed by .ci/run), started on a loopback
 * port with a throwaway configuration, users in a passwd-file, mail in maildirs owned by
 * `nobody`. Tests put messages in with IMAP APPEND, so UIDs
 * and UIDVALIDITY are the server's own.
 */
export interface Dovecot {
  port: number;
  /**
   * With `tls`: IMAP over TLS, with a self-signed certificate for "localhost" (as a misconfigured
   * server has); the plain port then offers STARTTLS with it too.
   */
  tlsPort: number | null;
  /** Adds a user, or changes the password of one (dovecot re-reads the file, at most once a second). */
  setUser(user: string, password: string): Promise<void>;
  stop(): Promise<void>;
}

export const dovecotAvailable = () => spawnSync("dovecot", ["--version"]).status === 0;

export async function startDovecot(options: { tls?: boolean } = {}): Promise<Dovecot> {
  const dir = mkdtempSync(path.join(os.tmpdir(), "dovecot-"));
  const port = await freePort();
  const tlsPort = options.tls ? await freePort() : null;
  if (options.tls) {
    execFileSync("openssl", ["req", "-x509", "-newkey", "rsa:2048", "-nodes", "-days", "1", "-subj", "/CN=localhost",
      "-keyout", path.join(dir, "key.pem"), "-out", path.join(dir, "cert.pem")], { stdio: "ignore" });
  }
  const nobody = { uid: Number(execFileSync("id", ["-u", "nobody"]).toString()), gid: Number(execFileSync("id", ["-g", "nobody"]).toString()) };
  const users = new Map<string, string>();
  const usersFile = path.join(dir, "users");
  let version = 0;
  const writeUsers = () => {
    writeFileSync(usersFile, [...users].map(([user, hash]) =>
      `${user}:${hash}:${nobody.uid}:${nobody.gid}::${path.join(dir, "home", user)}\n`).join(""));
    // dovecot re-reads the file when its mtime changes, compared in whole seconds: each version
    // gets a second of its own, even when written in the same second as the last read.
    const seconds = Math.floor(Date.now() / 1000) + ++version * 2;
    utimesSync(usersFile, seconds, seconds);
  };
  const setUser = async (user: string, password: string) => {
    const changing = users.has(user);
    const hash = execFileSync("doveadm", ["pw", "-s", "SHA512-CRYPT", "-p", password]).toString().trim();
    const home = path.join(dir, "home", user);
    if (!existsSync(home)) {
      mkdirSync(home, { recursive: true });
      chownSync(home, nobody.uid, nobody.gid);
    }
    users.set(user, hash);
    writeUsers();
    // dovecot looks at the file at most once a second: a login within that second would still
    // see the file as it was.
    if (changing || users.size > 1) await sleep(1100);
  };
  mkdirSync(path.join(dir, "home"));
  chmodSync(dir, 0o755); // nobody reaches the homes below
  writeUsers();
  const conf = path.join(dir, "dovecot.conf");
  writeFileSync(conf, `
protocols = imap
listen = 127.0.0.1
base_dir = ${dir}/run
state_dir = ${dir}/state
log_path = ${dir}/dovecot.log
instance_name = test-${path.basename(dir)}
${options.tls ? `ssl = yes\nssl_cert = <${dir}/cert.pem\nssl_key = <${dir}/key.pem` : "ssl = no"}
disable_plaintext_auth = no
auth_mechanisms = plain login
default_internal_user = nobody
default_login_user = nobody
mail_location = maildir:~/Maildir
passdb {
  driver = passwd-file
  args = scheme=SHA512-CRYPT ${usersFile}
}
userdb {
  driver = passwd-file
  args = ${usersFile}
}
service imap-login {
  inet_listener imap {
    address = 127.0.0.1
    port = ${port}
  }
  inet_listener imaps {
    address = 127.0.0.1
    port = ${tlsPort ?? 0}
    ssl = ${options.tls ? "yes" : "no"}
  }
  chroot =
}
service anvil {
  chroot =
}
`);
  // The master daemonizes: its output must not be a pipe this process waits on.
  execFileSync("dovecot", ["-c", conf], { stdio: "ignore" });
  // Ready when it greets.
  for (let i = 0; ; i++) {
    const greeted = await new Promise<boolean>((resolve) => {
      const socket = net.connect(port, "127.0.0.1");
      socket.once("data", (d) => { socket.destroy(); resolve(d.toString().startsWith("* OK")); });
      socket.once("error", () => resolve(false));
    });
    if (greeted) break;
    if (i > 100) throw new Error(`dovecot did not start: ${existsSync(path.join(dir, "dovecot.log")) ? readFileSync(path.join(dir, "dovecot.log"), "utf8") : ""}`);
    await sleep(100);
  }
  return {
    port,
    tlsPort,
    setUser,
    async stop() {
      const pidFile = path.join(dir, "run", "master.pid");
      if (existsSync(pidFile)) {
        const pid = Number(readFileSync(pidFile, "utf8").trim());
        try { process.kill(pid, "SIGTERM"); } catch { /* gone */ }
        for (let i = 0; i < 50; i++) {
          try { process.kill(pid, 0); } catch { break; }
          await sleep(100);
        }
      }
      rmSync(dir, { recursive: true, force: true });
    },
  };
}
