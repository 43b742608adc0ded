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
    testTimeout: 60_000,
    hookTimeout: 120_000,
    env: testEnv,
    reporters: ["default", "./test/helpers/summary-reporter.ts"],
  },
});
