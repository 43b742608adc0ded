/**
 * `npm run bench -- <name>`: runs bench/<name>.ts, which exports `run(args)`. Each benchmark starts
 * what it needs (a server on a free port, a database from BENCH_DATABASE_URL or 127.0.0.1:5432)
 * and prints its figures; bench/README.md keeps the recorded results.
 */
const [name, ...args] = process.argv.slice(2);
if (!name) {
  console.error("Usage: npm run bench -- <name> (see bench/README.md)");
  process.exit(1);
}
// The soak scenarios (issue 32) are a folder of their own: bench/soak/main.ts.
const mod = await import(name === "soak" ? "./soak/main.ts" : `./${name}.ts`).catch((e) => {
  console.error(`No benchmark "${name}": ${(e as Error).message}`);
  process.exit(1);
});
await mod.run(args);
process.exit(0);
