import type { Command } from "./command.js";

/** import_processor_balance and delete_processor_imports (decisions §10). Being built. */
export const processorImportCommands: Record<string, Command> = {};
