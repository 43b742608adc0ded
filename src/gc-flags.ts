import v8 from "node:v8";

/**
 * V8 garbage-collection flags for the API and the worker, set at start by src/gc-flags-first.ts
 * (Node refuses both in NODE_OPTIONS).
 *
 * `--no-parallel-scavenge`: young-generation collections on the main thread only. Where the API
 * shares a small machine with PostgreSQL, the helper threads of a parallel scavenge compete with
 * both for the same cores: on 2 cores, turning them off gave 5 to 19% more requests a second for 5
 * to 15% less CPU per request (bench/README.md, "overhead", step 8). PARALLEL_SCAVENGE=on keeps
 * V8's default, for machines with cores to spare.
 *
 * `--no-allocation-site-pretenuring`: start-up (introspection, building the schema) keeps most of
 * what it allocates, so V8 decides to allocate straight into the old generation at sites that the
 * request path shares with it. A request's objects made there die young in the old generation,
 * where a scavenge cannot see that they are dead, and keep what they point to in the young
 * generation alive until it is promoted: 3 to 10 KB a request and up to 54 µs of collection,
 * against 0.06 KB and 5 µs without (bench/README.md, "overhead", step 9). PRETENURING=on keeps
 * V8's default.
 */
export function applyGcFlags(env: NodeJS.ProcessEnv = process.env): void {
  if (env.PARALLEL_SCAVENGE !== "on") v8.setFlagsFromString("--no-parallel-scavenge");
  if (env.PRETENURING !== "on") v8.setFlagsFromString("--no-allocation-site-pretenuring");
}
