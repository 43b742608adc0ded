import v8 from "node:v8";

/**
 * V8's young-generation collections on the main thread only (`--no-parallel-scavenge`, which Node
 * does not take in NODE_OPTIONS). Where the API shares a small machine with PostgreSQL, the helper
 * threads of a parallel scavenge compete with both for the same cores: on 2 cores, turning them off
 * gave 6 to 19% more requests a second for 5 to 15% less CPU per request (bench/README.md,
 * "overhead", step 8). PARALLEL_SCAVENGE=on keeps V8's default, for machines with cores to spare.
 */
export function applyGcFlags(env: NodeJS.ProcessEnv = process.env): void {
  if (env.PARALLEL_SCAVENGE !== "on") v8.setFlagsFromString("--no-parallel-scavenge");
}
