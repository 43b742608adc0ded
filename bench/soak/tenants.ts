import { cliJson } from "./cli.js";

/** An organization with an owner, an API key and the owner's JWT, made as README's first session makes them. */
export interface Tenant {
  name: string;
  id: string;
  email: string;
  apiKey: string;
  /** `Bearer <key>`: what an integration sends. */
  keyAuth: string;
  /** `JWT <token>`: the owner's session (connecting sources and webhooks needs one). */
  ownerAuth: string;
}

export async function createTenant(root: string, env: NodeJS.ProcessEnv, name: string, email: string): Promise<Tenant> {
  const org = await cliJson<{ id: string }>(root, env, ["create_organization", "--name", name]);
  await cliJson(root, env, ["create_user", "--email", email, "--name", `${name} Owner`]);
  await cliJson(root, env, ["add_member", "--org-name", name, "--email", email, "--role", "owner"]);
  const key = await cliJson<{ secret: string }>(root, env, ["create_api_key", "--org-name", name, "--label", "soak"]);
  const jwt = await cliJson<{ token: string }>(root, env, ["issue_jwt", "--email", email, "--expires-in", "6h"]);
  return { name, id: org.id, email, apiKey: key.secret, keyAuth: `Bearer ${key.secret}`, ownerAuth: `JWT ${jwt.token}` };
}
