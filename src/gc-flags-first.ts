import { applyGcFlags } from "./gc-flags.js";

// The first import of each entry point (src/main.ts, worker/main.ts). ES modules run their imports
// before their own body, so flags set in the body would only hold once every module had loaded, and
// V8's pretenuring decisions made while loading would stay.
applyGcFlags();
