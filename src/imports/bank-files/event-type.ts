import type { EventType } from "./row.js";

/**
 * The event type a statement row starts with (contract, Behavior rule 8). Every imported event is
 * reviewed, so this is a first guess: the sign decides unless a keyword says otherwise.
 *
 * - `transfer`: money moving between the organization's own accounts, where neither side is
 *   income or expense: paying the card from chequing ("TFR-TO C/C", "TRANSFER TO CREDIT CARD"),
 *   the card's side of it ("PAYMENT THANK YOU"), loading or funding a prepaid card, a processor
 *   payout reaching the bank, and rows the bank itself marks as transfers (OFX `XFER`).
 *   Interac e-Transfers are payments to or from other people, not transfers: they fall to the sign.
 * - `income`: money in of any kind, interest and cashback included.
 * - `expense`: money out of any kind: purchases and payments made with the card, fees, interest charged.
 */
export function eventTypeFor(description: string, amount: string, ofxTransactionType?: string): EventType {
  const text = description.toUpperCase();
  const thirdPartyTransfer = /\bE-?\s?TRANSFER\b|\bE-?\s?TFR\b|\bINTERAC\b|\bE-?TRF\b/.test(text);
  if (!thirdPartyTransfer && (OWN_ACCOUNT_TRANSFER.some((k) => k.test(text)) || ofxTransactionType?.toUpperCase() === "XFER")) {
    return "transfer";
  }
  return amount.startsWith("-") ? "expense" : "income";
}

/** The card's side of its payment ("PAYMENT THANK YOU"): money in to the card, whatever sign a file gives it. */
const CARD_PAYMENT = [/\bPAYMENT\s*(?:-\s*)?THANK\s*YOU\b/, /\bPAIEMENT\s*MERCI\b/];
export const isCardPayment = (description: string) => CARD_PAYMENT.some((k) => k.test(description.toUpperCase()));

// `(?:\s*[-/])?\s*`, not `\s*[-/]?\s*`: the same words, without trying every split of a long run of spaces.
const OWN_ACCOUNT_TRANSFER: RegExp[] = [
  ...CARD_PAYMENT,                                                   // the card's side of its payment
  /\b(?:TFR|XFER|TRANSFER|TRSF)(?:\s*[-/])?\s*(?:TO|FROM|FR)\b/,    // between own accounts
  /\bONLINE BANKING TRANSFER\b/, /\bVIREMENT\b/,
  /\b(?:CARD\s+)?(?:LOAD|RELOAD|TOP[- ]?UP)\b/, /\bFUNDING\b/,     // prepaid card loads and funding
  /\bPAYOUT\b/,                                                      // a processor's balance paid to the bank
];
