import jwt from "jsonwebtoken";
import { CliError, organizationByName, required, sql, type Command } from "./command.js";
import { bankImportCommands } from "./bank-import-commands.js";
import { processorImportCommands } from "./processor-import-commands.js";
import { scanCommands } from "./scan-commands.js";
import { jobCommands } from "./job-commands.js";

const string = { type: "string" } as const;

export const commands: Record<string, Command> = {
  create_organization: {
    usage: "create_organization --name N [--currency CAD]",
    options: { name: string, currency: string },
    async run(ctx) {
      const [o] = await sql<{ id: string; name: string; functional_currency: string }>(ctx.db,
        "select id, name, functional_currency from app_private.create_organization($1, $2)",
        [required(ctx, "name"), (ctx.args.values.currency as string | undefined) ?? "CAD"]);
      return { result: { id: o.id, name: o.name, currency: o.functional_currency }, text: `Created organization "${o.name}" (${o.id}), currency ${o.functional_currency}.` };
    },
  },
  create_user: {
    usage: "create_user --email E [--name N]",
    options: { email: string, name: string },
    async run(ctx) {
      const [u] = await sql<{ id: string; email: string; name: string | null }>(ctx.db,
        "select id, email, name from app_private.create_user($1, $2)", [required(ctx, "email"), ctx.args.values.name ?? null]);
      return { result: { id: u.id, email: u.email, name: u.name }, text: `Created user ${u.email} (${u.id}).` };
    },
  },
  add_member: {
    usage: "add_member --org-name N --email E --role owner|admin|member",
    options: { "org-name": string, email: string, role: string },
    async run(ctx) {
      const org = await organizationByName(ctx.db, required(ctx, "org-name"));
      const [{ member }] = await sql<{ member: Record<string, unknown> }>(ctx.db,
        "select app_private.add_member($1, $2, $3) as member", [org.id, required(ctx, "email"), required(ctx, "role")]);
      return { result: { organizationId: org.id, ...member }, text: `Added ${member.email} to "${org.name}" as ${member.role}.` };
    },
  },
  create_api_key: {
    usage: "create_api_key --org-name N [--label L]",
    options: { "org-name": string, label: string },
    async run(ctx) {
      const org = await organizationByName(ctx.db, required(ctx, "org-name"));
      const [{ key }] = await sql<{ key: { apiKey: Record<string, unknown>; secret: string } }>(ctx.db,
        "select app_private.create_api_key($1, $2) as key", [org.id, ctx.args.values.label ?? ""]);
      return {
        result: { organizationId: org.id, ...key.apiKey, secret: key.secret },
        text: `Created API key ${key.apiKey.id} for "${org.name}". Its secret is shown only now:\n${key.secret}`,
      };
    },
  },
  revoke_api_key: {
    usage: "revoke_api_key --org-name N --key-id ID",
    options: { "org-name": string, "key-id": string },
    async run(ctx) {
      const org = await organizationByName(ctx.db, required(ctx, "org-name"));
      const keyId = required(ctx, "key-id");
      if (!/^[0-9a-f-]{36}$/i.test(keyId)) throw new CliError("--key-id must be an API key id (UUID).");
      const [{ key }] = await sql<{ key: { id: string; revokedAt: string } }>(ctx.db,
        "select app_private.revoke_api_key($1, $2) as key", [org.id, keyId]);
      return { result: { id: key.id, revokedAt: key.revokedAt }, text: `Revoked API key ${key.id}.` };
    },
  },
  issue_jwt: {
    usage: "issue_jwt --email E [--expires-in 1h]",
    options: { email: string, "expires-in": string },
    async run(ctx) {
      const email = required(ctx, "email");
      const [user] = await sql<{ id: string }>(ctx.db, "select id from app_private.user_by_email($1)", [email]);
      const expiresIn = (ctx.args.values["expires-in"] as string | undefined) ?? "1h";
      if (!/^\d+[smhd]?$/.test(expiresIn)) throw new CliError("--expires-in must look like 90s, 30m, 1h or 7d.");
      const privateKey = ctx.config.jwtPrivateKey;
      if (ctx.config.jwtPublicKey && !privateKey) throw new CliError("JWT_PUBLIC_KEY is set: JWT_PRIVATE_KEY is needed to sign RS256 tokens.");
      const token = jwt.sign({ sub: user.id }, privateKey ?? ctx.config.jwtSecret, {
        algorithm: privateKey ? "RS256" : "HS256",
        expiresIn: (/^\d+$/.test(expiresIn) ? Number(expiresIn) : expiresIn) as jwt.SignOptions["expiresIn"],
      });
      return { result: { userId: user.id, token, expiresIn }, text: token };
    },
  },
  ...bankImportCommands,
  ...processorImportCommands,
  ...scanCommands,
  ...jobCommands,
};
