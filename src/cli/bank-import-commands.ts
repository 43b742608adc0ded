import type { Command } from "./command.js";

/** import_bank_csv: bank CSV and OFX files into a payment account (decisions §8). Being built. */
export const bankImportCommands: Record<string, Command> = {};
