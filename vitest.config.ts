import { defineConfig } from "vitest/config";

const testEnv = {
  NODE_ENV: "test",
  GRAPHILE_ENV: "production",
  JWT_SECRET: "test-jwt-secret",
  AUTHENTICATOR_PASSWORD: "test-authenticator",
  WORKER: "off",
};
// The global setup runs in this process, the tests in workers: both see the same settings.
Object.assign(process.env, testEnv);

export default defineConfig({
  test: {
    include: ["test/**/*.test.ts"],
    globalSetup: ["test/helpers/global-setup.ts"],
    pool: "forks",
    // Two files at a time: most of a test's time is PostgreSQL's and child processes', and with
    // vitest's default a 2-core machine ran about one file at a time (11.4 minutes in all).
    maxWorkers: 2,
    testTimeout: 60_000,
    hookTimeout: 120_000,
    env: testEnv,
    reporters: ["default", "./test/helpers/summary-reporter.ts"],
  },
});
