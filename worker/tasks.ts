import type { TaskList } from "graphile-worker";

/** Every job the worker knows, by identifier. Later issues add receipt extraction and matching. */
export const taskList: TaskList = {
  // Hourly housekeeping: idempotency records live 24 hours, rate-limit windows one hour.
  async purge_expired(_payload, helpers) {
    await helpers.withPgClient((client) => client.query("select app_private.purge_expired()"));
  },
};

export const crontab = "0 * * * * purge_expired ?max=1";
