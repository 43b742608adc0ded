import { describe, expect, it } from "vitest";
import { totalByConsistency } from "../src/receipts/extraction/consistency.js";
import { parseReceiptText } from "../src/receipts/extraction/index.js";
import { receiptLines } from "../src/receipts/extraction/lines.js";

/* Receipt totals settled by the receipt's own arithmetic (invented receipts; no shop of any corpus). */
const reading = (text: string) => totalByConsistency(receiptLines(text));

describe("a total the receipt's arithmetic confirms", () => {
  it("subtotal + taxes (any of them) ± rounding, cash − change, a card payment on another line", () => {
    expect(reading("Subtotal 20.00\nGST 5% 1.00\nPST 7% 1.40\nTotal 22.40")).toMatchObject({ cents: 2240, confidence: "checked", checks: ["subtotal + tax"] });
    expect(reading("Sub total 46.89\nService charge 4.69\nGST 6% 3.09\nRounding 0.03\nTotal 54.70")).toMatchObject({ cents: 5470, confidence: "checked" });
    expect(reading("TOTAL 17.85\nCASH 50.00\nCHANGE 32.15")).toMatchObject({ cents: 1785, checks: ["cash − change"] });
    expect(reading("TOTAL 10.17\nVISA 10.17")).toMatchObject({ cents: 1017, checks: ["card payment"] });
  });

  it("prefers an amount the arithmetic supports over a labelled one it does not (a misread total)", () => {
    // Two OCR readings of one receipt: one merged a stray digit into the total (1,859.35 for 59.35); subtotal + tax and cash − change say 59.35.
    const text = "Subtotal 56.09\nSST 6% 3.26\nTOTAL 1,859.35\nCash 100.00\nChange 40.65\n\nSubtotal 56.09\nSST 6% 3.26\nTOTAL 59.35\nCash 100.00\nChange 40.65";
    expect(reading(text)).toMatchObject({ cents: 5935, confidence: "checked" });
    expect(parseReceiptText(text, { dateOrder: "auto" })).toMatchObject({ amount: "59.35", amountConfidence: "high" });
  });

  it("an amount due is what is paid, even when partial totals add up to something else (an adjustment note)", () => {
    const text = "Total 0% supplies: -16.34\nTotal 6% supplies (excl. GST): 9.36\nGST: 0.56\nTotal 6% supplies (inc. GST): 9.92\nTotal payable: -6.42";
    expect(reading(text)).toMatchObject({ cents: -642 });
  });

  it("a total with a tip the checks see stays; an unlabelled amount never replaces a labelled total", () => {
    expect(reading("Subtotal 50.00\nTax 6.50\nTotal 56.50\nTip 10.00\nTotal 66.50")).toMatchObject({ cents: 6650, confidence: "checked" });
    expect(reading("Subtotal 50.00\nTax 6.50\n56.50\nTotal 66.50")).toMatchObject({ cents: 6650, confidence: "labelled" });
  });

  it("a payment line never confirms itself, and a labelled total with no arithmetic is 'labelled'; no label at all is 'guessed'", () => {
    expect(reading("Card type: VISA 42.08\nTotal incl GST 62.00")).toMatchObject({ cents: 6200, confidence: "labelled" });
    expect(reading("Total 12.34")).toMatchObject({ cents: 1234, confidence: "labelled", checks: [] });
    expect(reading("COFFEE 3.50\nMUFFIN 2.75")).toMatchObject({ cents: 350, confidence: "guessed" });
    expect(reading("THANK YOU")).toBeNull();
  });

  it("what was paid outranks a total nothing confirms, when the receipt bears it out elsewhere", () => {
    // The total misread (10.00 for 13.80): cash less change is 13.80, the item's own amount.
    expect(reading("Widget 2 X 6.90 13.80\nTotal incl. tax RM 10.00\nCASH RM 50.00\nCHANGE RM 36.20")).toMatchObject({ cents: 1380, confidence: "checked", checks: ["cash − change"] });
    // Cash handed over with nothing given back, and the parts add up to it (a total misread 734.50 for 74.50).
    expect(reading("Subtotal 70.28\nTax 4.22\nTotal 734.50\nCash 74.50\nChange 0.00")).toMatchObject({ cents: 7450, checks: ["cash, no change", "subtotal + tax"] });
    // A paid amount the receipt does not bear out moves nothing (the change misread).
    expect(reading("Total 12.00\nCash 20.00\nChange 7.00")).toMatchObject({ cents: 1200, confidence: "labelled" });
  });

  it("'GST payable' is the tax, 'Due' alone is the amount due", () => {
    expect(reading("Total (excl. GST) 30.00\nGST payable (6%): 1.80\nTotal 31.80")).toMatchObject({ cents: 3180, confidence: "checked" });
    expect(reading("Due 23.70\nPaid 30.00\nChange 6.30\n(Total included GST 6%: 1.34)")).toMatchObject({ cents: 2370 });
  });

  it("a tax summary's row gives the checks its parts and is never the total", () => {
    const text = "Item 13.78\nQty: 1 Total RM 13.78\nCASH 20.00\nChange 6.22\nGST Summary Amount Tax\nSR @6% 13.00 0.78\nTotal 13.00 0.78";
    expect(reading(text)).toMatchObject({ cents: 1378, confidence: "checked" });
    expect(reading("Total 55.00\nSR 6% 51.89 3.11 55.00")).toMatchObject({ cents: 5500, confidence: "checked", checks: ["subtotal + tax"] });
  });

  it("an amount due is not moved by partial totals that add up", () => {
    const text = "Total 6% supplies (excl. GST): 20.00\nGST: 1.20\nTotal 6% supplies (inc. GST): 21.20\nTotal 0% supplies: 14.35\nTotal payable: 35.55";
    expect(reading(text)).toMatchObject({ cents: 3555 });
  });

  it("a payment of part of the bill never becomes the total: split payments, deposits, points, cash back, a cash discount, a refund", () => {
    expect(reading("Item A 25.00\nItem B 25.00\nTotal 50.00\nGift card 25.00\nVisa 25.00")).toMatchObject({ cents: 5000 });
    expect(reading("Shirt 50.00\nPants 50.00\nTotal 100.00\nCash 50.00\nVisa 50.00\nChange 0.00")).toMatchObject({ cents: 10000 });
    expect(reading("Sofa 500.00\nTotal 500.00\nDeposit 200.00\nCash 200.00\nChange 0.00")).toMatchObject({ cents: 50000 });
    expect(reading("Coffee 5.00\nMuffin 5.00\nTotal 10.00\nPoints redeemed 5.00\nCash 5.00\nChange 0.00")).toMatchObject({ cents: 1000 });
    expect(reading("Milk 20.00\nBread 20.00\nTotal 40.00\nCash back 20.00\nDebit 60.00\nChange 0.00")).toMatchObject({ cents: 4000 });
    expect(reading("Coffee 2.00\nMuffin 4.00\nSubtotal 6.00\nCash discount 2.00\nTotal 4.00\nChange 0.00")).toMatchObject({ cents: 400 });
    expect(reading("Return Widget 12.99\nTotal -12.99\nVisa 12.99")).toMatchObject({ cents: -1299 });
  });

  it("an amount due that partial totals add up to is checked; one that a payment adds up to is not (labels read apart)", () => {
    expect(reading("Total 6% supplies (inc. GST): 21.20\nTotal 0% supplies: 14.35\nTotal payable: 35.55")).toMatchObject({ cents: 3555, checks: ["partial totals"] });
    expect(reading("Subtotal 65.00\nGST 4.69\nTotal 69.69\nAmount Due 100.00\nCash 30.31")).toMatchObject({ cents: 6969 });
  });

  it("'Due date' is no amount due; a total in two currencies is no tax summary; a tax-first line that names the total is the total", () => {
    expect(reading("Subtotal 100.00\nTax 13.00\nTotal 113.00\nDue Date:\n50.00")).toMatchObject({ cents: 11300 });
    expect(reading("Total C$39.00 US$29.00")).toMatchObject({ cents: 2900, confidence: "labelled" });
    expect(reading("Item 50.00\nGST Incl. Total Payable 53.00")).toMatchObject({ cents: 5300, confidence: "labelled" });
  });

  it("cash of exactly the total confirms it; a cash sale rounded to 5 cents is what was paid", () => {
    expect(reading("Net Total RM18.40\nReceived Cash RM18.40")).toMatchObject({ cents: 1840, confidence: "checked", checks: ["cash, no change"] });
    expect(reading("Total 26.32\nRounding adj -0.02\nAmount to be paid 26.30\nCash 30.00\nChange 3.70")).toMatchObject({ cents: 2630, checks: ["cash − change"] });
  });

  it("cash that equals another amount confirms only the total chosen: a layby's part paid, a total before a tip, an item", () => {
    expect(reading("Sofa 500.00\nTotal 500.00\nTotal paid 200.00\nCash 200.00\nBalance 300.00")).toMatchObject({ cents: 50000 });
    expect(reading("Total 43.20\nCash 43.20\nTip 8.00\nTotal 51.20")).toMatchObject({ cents: 5120 });
    expect(reading("Shirt 60.00\nPants 40.00\nAmount 100.00\nCash 60.00\nVoucher 40.00")).toMatchObject({ cents: 10000 });
    expect(reading("Item 50.00\nAmount 43.20\nCash 50.00")).toMatchObject({ cents: 4320 });
    expect(reading("Return Widget 12.99\nAmount -12.99\nCash 12.99")).toMatchObject({ cents: -1299 });
    // Partial totals confirm only a total labelled above them.
    expect(reading("Total purchases 30.00\nTotal returns 20.00\nTotal 10.00")).toMatchObject({ confidence: "labelled" });
  });

  it("a tax line naming its amount is the tax; a tax summary with one currency printed is still one", () => {
    expect(reading("Subtotal 100.00\nGST amount payable 6.00\nTotal 106.00")).toMatchObject({ cents: 10600, confidence: "checked" });
    expect(reading("Subtotal 100.00\nVAT amount due 20.00\nTotal 120.00")).toMatchObject({ cents: 12000, confidence: "checked" });
    expect(reading("Tax Invoice Total Due 45.00")).toMatchObject({ cents: 4500, confidence: "labelled" });
    expect(reading("Total 623.60\nCash 100.00\nChange 36.40\nSR @6% RM60.00 3.60")).toMatchObject({ cents: 6360, confidence: "checked" });
    expect(reading("Total 90.00\nDue on receipt 100.00")).toMatchObject({ cents: 10000 });
  });

  it("a 'rounded' total well below the total is another amount paired with the label (labels read apart from their amounts)", () => {
    const text = "Item(s) :3\nRM 27.47\n-RM 0.02\nTOTAL RM 27.45\nRM 40.00\nROUNDING ADJUSTMENT\nTOTAL ROUNDED\nRM12.55\nCASH\nCHANGE";
    expect(reading(text)).toMatchObject({ cents: 2745 });
    // Labels one row off their amounts: the rounding adjustment is no total.
    expect(reading("Qty(s):3\nROUNDING ADJUSTMENT RM27.47\nTOTAL ROUNDED -RM 0.02\nCASH RM27.45\nCHANGE RM40.00\nRM12.55")).not.toMatchObject({ cents: -2 });
    // The same with the total's label and amount on two lines, "RM" misread "RH".
    expect(reading("Item(s):3 RM27.47\n-RM0.02\nTOTAL\nRH27.45\nRM 40.00\nROUNDING ADJUSTME\nTOTAL ROUNDED RM12.55\nCASH\nCHANGE")).toMatchObject({ cents: 2745 });
    // Rounded by a few cents, it is what is paid.
    expect(reading("Total 41.83\nRounding adj 0.02\nTotal rounded 41.85")).toMatchObject({ cents: 4185 });
    // Below by a discount printed between them, it is still the total paid.
    expect(reading("Total 120.90\nDiscount 0.90\nRounding adj 0.00\nTotal after rounding 120.00")).toMatchObject({ cents: 12000 });
  });

  it("a total after rounding is confirmed by the total before it and the adjustment", () => {
    const text = "Item 4.75\nTax 0.29\n5.60 T\nMember discount -0.56\nTOTAL RM INCL. OF GST 5.04\nROUNDING ADJ 0.01\nTOTAL RM 5.05";
    expect(reading(text)).toMatchObject({ cents: 505, confidence: "checked", checks: ["total ± rounding"] });
  });
});
