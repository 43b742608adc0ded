import { describe, expect, it } from "vitest";
import { parseReceiptText } from "../src/receipts/extraction/index.js";
import { READING_BREAK, receiptLines } from "../src/receipts/extraction/lines.js";
import { totalLostItsCents } from "../src/receipts/extraction/total.js";

const parse = (text: string, dateOrder: "auto" | "DMY" | "MDY" = "auto") => parseReceiptText(text, { dateOrder });
const amountOf = (text: string) => parse(text).amount;

describe("receipt total", () => {
  it("takes the total, not the subtotal or the tax", () => {
    expect(amountOf("Subtotal 20.00\nGST 5% 1.00\nPST 7% 1.40\nTotal 22.40")).toBe("22.40");
    expect(amountOf("SUB TOTAL 9.00\nHST 1.17\nTOTAL: 10.17\nVISA 10.17")).toBe("10.17");
    expect(amountOf("Sub-total 100.00\nVAT 20% 20.00\nTotal VAT 20.00\nTotal 120.00")).toBe("120.00");
  });

  it("ignores cash tendered, change, rounding, discounts and savings", () => {
    expect(amountOf("TOTAL 17.85\nCASH 50.00\nCHANGE 32.15")).toBe("17.85");
    expect(amountOf("Amount due 8.99\nTendered 20.00\nChange due 11.01")).toBe("8.99");
    expect(amountOf("Total 12.34\nRounding -0.04\nDiscount 5.00\nYou saved 5.00\nCash 20.00")).toBe("12.34");
    expect(amountOf("Total items 3\nTotal qty 12\nTOTAL 4.50")).toBe("4.50");
  });

  it("never takes a rounding or change amount below the receipt's parts for the total", () => {
    // A photo's column of labels lost its "Rounding" line: TOTAL pairs with the rounding amount.
    // The amounts still add up (46.89 + 0.01, 50.00 - 3.10): 46.90, whatever the labels say.
    const askew = ["SUB TOTAL", "TOTAL", "CASH", "CHANGE", "46.89", "0.01", "46.90", "50.00", "3.10"].join("\n");
    expect(parse(askew)).toMatchObject({ amount: "46.90", amountConfidence: "medium" });
    // With the total's own amount unread too: nothing, rather than the rounding.
    const unread = ["SUB TOTAL", "TOTAL", "CASH", "CHANGE", "46.89", "0.01", "50.00", "3.10"].join("\n");
    expect(parse(unread)).toMatchObject({ amount: null, amountConfidence: null });
    // Cash and change read one place off their labels: the sum and the difference still name the total.
    expect(amountOf("Potted orchid 12.67\nSubtotal 9.09\nHST @ 15% 69.69\nTotal 100.00\nCash tendered 30.31\n60.60")).toBe("69.69");
    // The strongest label on an amount below the parts gives way to a total that clears them.
    expect(parse("Sub Total 46.89\nTotal Incl GST 0.01\nTotal 46.90\nCash 50.00")).toMatchObject({ amount: "46.90", amountConfidence: "medium" });
    // An amount due after a deposit, a gift card or a trade-in is what is paid, however far under the parts.
    expect(amountOf("Subtotal 200.00\nHST 26.00\nTotal 226.00\nDeposit paid 150.00\nBalance due 76.00")).toBe("76.00");
    expect(amountOf("Subtotal 100.00\nHST 13.00\nTotal 113.00\nGift card 20.00\nAmount due 93.00")).toBe("93.00");
    // One reading's total misread under the parts (44.20 for 46.20) gives way to the other's.
    expect(amountOf("Sub Total 46.20\nTotal Incl. GST 44.20\nTOTAL 46.20\nCASH 50.00")).toBe("46.20");
    // Under the parts, an amount the arithmetic supports replaces it whatever its label (44.94 + 1.26).
    expect(parse("Sub-Total 44.94\nGST 1.26\nTotal 44.20\n46.20\nMaster 46.20")).toMatchObject({ amount: "46.20", amountConfidence: "high" });
    // A subtotal nothing reaches is the misreading: the total stays; so does one just under its parts (a digit misread).
    expect(amountOf("Subtotal 1859.35\nTotal 59.35")).toBe("59.35");
    expect(amountOf("Sub-Total 62.80\nTotal GST(I) 3.51\nTotal Incl GST RM 62.00\nCard type : VISA 62.88")).toBe("62.00");
  });

  it("knows the labels of a grand total", () => {
    expect(amountOf("Subtotal 40.00\nTax 5.20\nGRAND TOTAL 45.20\nPaid 50.00")).toBe("45.20");
    expect(amountOf("Total 30.00\nDeposit 10.00\nBALANCE DUE 20.00")).toBe("20.00");
    expect(amountOf("Nett Total 18.90\nTotal Tax 1.07")).toBe("18.90");
    expect(amountOf("Total (excl. GST) 10.00\nGST 0.50\nTotal (incl. GST) 10.50")).toBe("10.50");
    expect(amountOf("Total Sales (Inclusive GST) 31.80\nCash 40.00")).toBe("31.80");
    expect(amountOf("TOTAL RM 12.30\nCASH RM 20.00\nCHANGE RM 7.70")).toBe("12.30");
    expect(amountOf("Total 46.89\nRounding adj 0.01\nTotal after rounding 46.90")).toBe("46.90");
  });

  it("includes the tip when a total with the tip follows", () => {
    expect(amountOf("Subtotal 50.00\nTax 6.50\nTotal 56.50\nTip 10.00\nTotal 66.50")).toBe("66.50");
    expect(amountOf("Total 56.50\nTip 10.00")).toBe("56.50");
    expect(amountOf("Suggested tip: 15% 8.48\nTOTAL 56.50")).toBe("56.50");
  });

  it("reads thousands separators, symbols and European decimals", () => {
    expect(amountOf("Total $1,234.56")).toBe("1234.56");
    expect(amountOf("Summe 1.234,56 €")).toBe("1234.56");
    expect(amountOf("TOTAL EUR 12,30")).toBe("12.30");
    expect(amountOf("Total £2,500.00")).toBe("2500.00");
  });

  it("survives OCR noise", () => {
    expect(amountOf("T0TAL: 12 .30")).toBe("12.30");
    expect(amountOf("TOTAI 4O.50\nCASH 50.00")).toBe("40.50");
    expect(amountOf("Tota1 9.99")).toBe("9.99");
  });

  it("pairs labels and amounts printed in separate columns", () => {
    expect(amountOf("TOTAL\nRM 7.20\nCASH\nRM 10.00")).toBe("7.20");
    expect(amountOf("TOTAL INCL. TAX\nCASH\nCHANGE\n12.40\n20.00\n7.60")).toBe("12.40");
  });

  it("keeps a negative total of a refund or adjustment note", () => {
    expect(amountOf("CREDIT NOTE\nItems returned -9.00\nTOTAL PAYABLE -9.00")).toBe("-9.00");
    expect(amountOf("Refund total 4.50-")).toBe("-4.50");
  });

  it("takes cash minus change when no total was read", () => {
    expect(amountOf("Noodles 1 RM7.50\nSub-Total RM7.50\nGST RM0.45\nCash RM10.05\nChange RM2.10")).toBe("7.95");
    expect(amountOf("Coffee 3.50\nCash 10.00\nChange 0.00")).toBe("3.50");
  });

  it("does not take a total larger than the cash that paid it", () => {
    expect(amountOf("SUBTOTAL RM23.40\nTOTAL | F423 .40\nCASH 25.00\nCHANGE 1.60")).toBe("23.40");
    expect(amountOf("TOTAL 17.85\nCASH 50.00\nCHANGE 32.15")).toBe("17.85");
  });

  it("does not take a zero balance left after payment", () => {
    expect(amountOf("Total $88.40\nPaid by VISA 88.40\nBalance due 0.00")).toBe("88.40");
  });

  it("falls back to the largest amount that is not a payment", () => {
    expect(amountOf("Coffee 3.50\nMuffin 2.75\nCash 10.00")).toBe("3.50");
    // With the change printed, what the cash paid is known: 10.00 - 3.75.
    expect(amountOf("Coffee 3.50\nMuffin 2.75\nCash 10.00\nChange 3.75")).toBe("6.25");
    expect(amountOf("Subtotal 6.25\nCash 10.00")).toBe("6.25");
    expect(amountOf("Thank you for visiting\nSee you soon")).toBeNull();
  });

  it("does not read dates, times, percentages or phone numbers as amounts", () => {
    expect(amountOf("14.03.2023 12.30\nTel 604-555-0199\nGST 5%\nTotal 8.00")).toBe("8.00");
    expect(amountOf("Date 14.03.23\nTime 13.45")).toBeNull();
  });
});

describe("receipt date", () => {
  const dates = (text: string, order: "auto" | "DMY" | "MDY" = "auto") => parse(text, order).dateReadings;

  it("reads the usual written forms", () => {
    for (const text of [
      "2023-03-14",
      "14/03/2023",
      "03/14/2023",
      "14-03-2023",
      "14.03.2023",
      "Mar 14, 2023",
      "14 Mar 2023",
      "March 14 2023",
      "14-MAR-23",
      "2023/03/14",
      "14/03/23",
      "14/03/2023 13:45",
      "Tuesday, 14th March 2023",
      "14/MAR/2023",
      "14-OCT-23".replace("OCT", "MAR"),
      "Date 14-MAR-2023 09:15",
    ]) {
      expect(dates(`Corner Shop\n${text}\nTotal 1.00`), text).toEqual(["2023-03-14"]);
    }
  });

  it("gives both readings of an ambiguous date under auto, one under DMY or MDY", () => {
    expect(dates("Date: 03/04/2023")).toEqual(["2023-04-03", "2023-03-04"]);
    expect(dates("Date: 03/04/2023", "DMY")).toEqual(["2023-04-03"]);
    expect(dates("Date: 03/04/2023", "MDY")).toEqual(["2023-03-04"]);
    expect(dates("Date: 05/05/2023")).toEqual(["2023-05-05"]);
  });

  it("keeps the only valid reading whatever the order asked", () => {
    expect(dates("4/22/2018 08:10PM", "DMY")).toEqual(["2018-04-22"]);
    expect(dates("22/4/2018", "MDY")).toEqual(["2018-04-22"]);
  });

  it("orders the two readings by what the receipt's other dates show", () => {
    expect(dates("Sale 03/04/2023 10:00\nReturn by 12/25/2023")).toEqual(["2023-03-04", "2023-04-03"]);
  });

  it("reads two-digit years as 20yy", () => {
    expect(dates("Date 25/12/22")).toEqual(["2022-12-25"]);
    expect(dates("05-01-16 14:41", "DMY")).toEqual(["2016-01-05"]);
  });

  it("prefers the labelled or time-stamped date over other dates", () => {
    expect(dates("Offer valid until 30/06/2023\nDate: 14/03/2023")).toEqual(["2023-03-14"]);
    expect(dates("Sale 1 - 5 March 2023\n14/03/2023 13:45\nTotal 3.00")).toEqual(["2023-03-14"]);
    expect(dates("Card expiry 31/08/2025\n2023-03-14")).toEqual(["2023-03-14"]);
  });

  it("reads dates whose separators OCR doubled, dropped or glued to the time", () => {
    expect(dates("Mar 14,.2023 7:07 PM")).toEqual(["2023-03-14"]);
    expect(dates("DATE March 92023\nTIME 17:44")).toEqual(["2023-03-09"]);
    expect(dates("Mar 142023")).toEqual(["2023-03-14"]);
    expect(dates("Mar14, 20234155 PM")).toEqual(["2023-03-14"]);
    expect(dates("14 Mar 20231:45 PM")).toEqual(["2023-03-14"]);
    expect(dates("14/03/202313:45", "DMY")).toEqual(["2023-03-14"]);
    expect(dates("Order 14/03/202312345")).toEqual([]);
    expect(dates("Mar 2023")).toEqual([]);
  });

  it("merges two readings broken in different digits", () => {
    expect(dates("Date 07/89/2023 10:00\n\nDate 97/09/2023 10:00", "DMY")).toEqual(["2023-09-07"]);
    expect(dates("21/04/2823\nTotal 1.00\n\n21/64/2023\nTotal 1.00", "DMY")).toEqual(["2023-04-21"]);
    // More than one merge makes a date: none is trusted.
    expect(dates("Date 41/07/2023\n\nDate 12/75/2023", "DMY")).toEqual([]);
  });

  it("mends a zero read as 8, 6 or 9 when only one mending makes a date", () => {
    expect(dates("CASH 17/83/2817 21:35", "DMY")).toEqual(["2017-03-17"]);
    expect(dates("Date 26/98/2023", "DMY")).toEqual([]);
  });

  it("ignores implausible years and things that are not dates", () => {
    expect(dates("Est. 14/03/1987\n2023-03-14")).toEqual(["2023-03-14"]);
    expect(dates(`Date 01/01/${new Date().getFullYear() + 5}`)).toEqual([]);
    expect(dates("Unit 17/54 Main Road\nTel 07-386 7524")).toEqual([]);
    expect(dates("31/02/2023")).toEqual([]);
  });
});

describe("receipt vendor", () => {
  const vendor = (text: string) => parse(text).vendorName;

  it("skips titles, addresses, phones, registration numbers and dates", () => {
    expect(vendor("TAX INVOICE\nMAPLE LEAF HARDWARE LTD\n123 King Street West\nTel: 416-555-0100")).toBe("MAPLE LEAF HARDWARE LTD");
    expect(vendor("Welcome to\nBlue Door Cafe\n42 Harbour Rd\nwww.bluedoor.example")).toBe("Blue Door Cafe");
    expect(vendor("(123456-X)\nGST REG NO: 000123456789\nSINAR JAYA TRADING SDN BHD\nNO 5, JALAN MAJU 3")).toBe(
      "SINAR JAYA TRADING SDN BHD",
    );
    expect(vendor("14/03/2023 10:22\nOFFICIAL RECEIPT\nGreenfield Books\n")).toBe("Greenfield Books");
  });

  it("skips logo noise read as letters", () => {
    expect(vendor("~ ' ;\nx dl ip\nHARBOUR FRESH MARKET\n88 Quay Street")).toBe("HARBOUR FRESH MARKET");
  });

  it("cleans punctuation and registration numbers around the name", () => {
    expect(vendor("*** SUNRISE BAKERY ***\nTotal 3.00")).toBe("SUNRISE BAKERY");
    expect(vendor("KAMPUNG MAJU SDN. BHD. (998877-K)\nLOT 7, JALAN 2")).toBe("KAMPUNG MAJU SDN. BHD.");
  });

  it("joins a legal name wrapped over lines", () => {
    expect(vendor("BINTANG TIMUR HARDWARE\nENTERPRISE (SEKSYEN\nTUJUH) SDN BHD\n12, JALAN 4/7")).toBe(
      "BINTANG TIMUR HARDWARE ENTERPRISE (SEKSYEN TUJUH) SDN BHD",
    );
    expect(vendor("RIVERSIDE PAPER\nCO. (M) SDN BHD\n(CO. NO. 12345-A)")).toBe("RIVERSIDE PAPER CO. (M) SDN BHD");
  });

  it("finds the shop named in an e-mailed receipt's sentence", () => {
    expect(vendor("Hello Sam,\n\nThanks for your order from Tidewater Kites Co.! Here is your receipt.\nTotal: $30.00")).toBe(
      "Tidewater Kites Co.",
    );
    expect(vendor("Receipt from Quillbright Labs Inc.\nquillbright.io\nTotal USD $9.00")).toBe("Quillbright Labs Inc.");
    expect(vendor("Hi there,\nMaple Row Dental\nCleaning $120.00")).toBe("Maple Row Dental");
  });

  it("does not take an item line with a price for the shop", () => {
    expect(vendor("$42.10\n\nCedar Hollow Garage\nShop Supplies $6.54\nTotal $42.10")).toBe("Cedar Hollow Garage");
  });

  it("reads street words as a name when no number goes with them", () => {
    expect(vendor("==========\nOAKRIDGE BUILDING SUPPLY\n6721 50 Ave")).toBe("OAKRIDGE BUILDING SUPPLY");
  });

  it("drops punctuation OCR put inside a name and closes a parenthesis it lost", () => {
    expect(vendor("Harbour: Fresh Market\n88 Quay Street")).toBe("Harbour Fresh Market");
    expect(vendor("KEDAI RUNCIT. MAJU JAYA\nNO 5, JALAN 3")).toBe("KEDAI RUNCIT MAJU JAYA");
    expect(vendor("Northern Grind Coffee Co.\nTotal 3.00")).toBe("Northern Grind Coffee Co.");
    expect(vendor("MR. TOOLS (KL) SDN BHD")).toBe("MR. TOOLS (KL) SDN BHD");
    expect(vendor("SINAR BAKERIES (KL SDN BHD\nLOT 7, JALAN 2")).toBe("SINAR BAKERIES (KL) SDN BHD");
  });

  it("prefers the name both OCR readings agree on over noise above it", () => {
    const first = "ERTL\nCoastal Gas & Go\n4150 Meridian St\nTOTAL 7.00";
    const second = "E RT\nCoastal Gas & Go\n4150 Meridian St\nTOTAL 7.00";
    expect(vendor(`${first}\n\n${second}`)).toBe("Coastal Gas & Go");
  });

  it("is null when nothing looks like a name", () => {
    expect(vendor("12.30\n14/03/2023\n#### 1234")).toBeNull();
  });
});

describe("a reading that lost the total's cents", () => {
  const lost = (text: string) => totalLostItsCents(receiptLines(text));

  it("is seen when the total line's amount stops at the decimal point", () => {
    expect(lost("SUBTOTAL $19.\nGST (5%) $0.\nTOTAL : $22.\nVISA 22.")).toBe(true);
    // The other reading's total is another amount: still lost.
    expect(lost("Total $41.\n\nGST (5%) $1.83\nTotal sal.")).toBe(true);
  });

  it("is not seen when another reading has the whole total, or no total was cut", () => {
    expect(lost("Total 43.\n\nSubtotal 38.18\nTotal ; 43.14")).toBe(false);
    expect(lost("Subtotal 38.18\nTotal 43.14\nThank you.")).toBe(false);
    expect(lost("LOT 1-015.\nTotal 21.60")).toBe(false);
    expect(lost("Item 12.\nTotal 21.60")).toBe(false);
  });

  it("lets the parser prefer the complete amount of a further reading", () => {
    expect(amountOf("Subtotal $36.\nTotal $41.\n\nTotal sal.\n\nSubtotal $36.63\nTotal $41.02")).toBe("41.02");
  });
});

describe("receipt currency", () => {
  const currency = (text: string) => parse(text).currency;
  it("reads symbols and codes", () => {
    expect(currency("TOTAL RM 12.30")).toBe("MYR");
    expect(currency("Total (RM) 12.30")).toBe("MYR");
    expect(currency("Total CA$ 12.30")).toBe("CAD");
    expect(currency("Total C$12.30")).toBe("CAD");
    expect(currency("Amount due 12.30 CAD")).toBe("CAD");
    expect(currency("Total US$12.30")).toBe("USD");
    expect(currency("Total USD 12.30")).toBe("USD");
    expect(currency("Total €12,30")).toBe("EUR");
    expect(currency("Total £12.30")).toBe("GBP");
  });
  it("leaves a bare dollar sign unknown", () => {
    expect(currency("Total $12.30")).toBeNull();
    expect(currency("Total 12.30")).toBeNull();
  });
  it("does not take RM inside a word", () => {
    expect(currency("FIRM FOODS\nTotal 12.30")).toBeNull();
  });
});

describe("a whole receipt", () => {
  it("reads every field", () => {
    const text = [
      "@@ ~~",
      "TAX INVOICE",
      "PELANGI STATIONERY SDN BHD",
      "(765432-W)",
      "NO. 9, JALAN BUNGA RAYA, 50000 KUALA LUMPUR",
      "TEL: 03-1234 5678",
      "DATE: 07/08/2019 TIME: 15:02",
      "PEN BLUE 2 X 1.50 3.00",
      "A4 PAPER 1 X 12.90 12.90",
      "SUB TOTAL (RM) 15.90",
      "TOTAL GST (RM) 0.95",
      "ROUNDING (RM) 0.00",
      "TOTAL (RM) 16.85",
      "CASH 20.00",
      "CHANGE 3.15",
      "GST SUMMARY AMOUNT TAX",
      "SR 6% 15.90 0.95",
      "TOTAL: 15.90 0.95",
    ].join("\n");
    expect(parse(text, "DMY")).toEqual({
      vendorName: "PELANGI STATIONERY SDN BHD",
      vendorConfidence: "high",
      amount: "16.85",
      amountConfidence: "high",
      currency: "MYR",
      dateReadings: ["2019-08-07"],
      dateConfidence: "medium",
    });
  });
});

describe("how far each field can be trusted", () => {
  it("a date read alike twice (two OCR readings) is high; once, medium; the first unlabelled date, low; a mended one, low", () => {
    const labelled = "SHOP\nDate: 14/03/2023 13:45\nTotal 5.00";
    expect(parse(labelled, "DMY").dateConfidence).toBe("medium");
    expect(parse(`${labelled}\n\n${labelled}`, "DMY").dateConfidence).toBe("high");
    expect(parse("SHOP\n14/03/2023\nTotal 5.00", "DMY").dateConfidence).toBe("low");
    // Read twice, an unlabelled date is still merely the first seen; so is an expiry.
    expect(parse("SHOP\n14/03/2023\nTotal 5.00\n\nSHOP\n14/03/2023\nTotal 5.00", "DMY").dateConfidence).toBe("low");
    expect(parse("SHOP\nValid until 14/03/2023\nTotal 5.00\nValid until 14/03/2023", "DMY").dateConfidence).toBe("low");
    // Confirmed by the reading the organization's order gives (04/03 is April 3rd month-first).
    expect(parse("SHOP\nDate: 04/03/2023\nTotal 5.00\nDate: 04/03/2023", "MDY")).toMatchObject({ dateReadings: ["2023-04-03"], dateConfidence: "high" });
    // …and not by another printed date whose other reading happens to be the same day.
    expect(parse("SHOP\nDate: 04/03/2023\nTotal 5.00\nDate: 03/04/2023", "MDY")).toMatchObject({ dateReadings: ["2023-04-03"], dateConfidence: "medium" });
    // A timestamp counts however it is joined: "at 9:08 AM" (email receipts), "14:32".
    expect(parse("SHOP\nNotes 01/02/23\n29/09/23 at 9:08 AM\nTotal 5.00", "DMY")).toMatchObject({ dateReadings: ["2023-09-29"], dateConfidence: "medium" });
    // Both readings broke the date differently; the digit-by-digit merge is a repair.
    const mended = parse("SHOP\nDate: 05/85/2023\nTotal 5.00\n\nSHOP\nDate: 95/05/2023\nTotal 5.00", "DMY");
    expect(mended).toMatchObject({ dateReadings: ["2023-05-05"], dateConfidence: "low" });
    expect(parse("SHOP\nTotal 5.00", "DMY")).toMatchObject({ dateReadings: [], dateConfidence: null });
  });

  it("the vendor is looked for at the top of each OCR reading: one engine may lose the name the other reads", () => {
    const first = ["TAX INVOICE", ...Array.from({ length: 11 }, (_, i) => `Item ${i + 1} 1.00`), "TOTAL 11.00"].join("\n");
    const second = ["CORNER GROCER LTD", "12 Main St", "TOTAL 11.00"].join("\n");
    expect(parse(`${first}${READING_BREAK}${second}`, "DMY")).toMatchObject({ vendorName: "CORNER GROCER LTD", amount: "11.00" });
    // Without the break it is one text, and the name is too far down to be the shop's.
    expect(parse(`${first}\n\n${second}`, "DMY").vendorName).not.toBe("CORNER GROCER LTD");
  });

  it("of two readings of one name, the one with its spaces is kept", () => {
    const texts = ["BLUEWATERBAKERY&CAFE\n12 Main St\nTotal 5.00", "BLUEWATER BAKERY & CAFE\n12 Main St\nTotal 5.00"];
    expect(parse(texts.join("\n\n"), "DMY")).toMatchObject({ vendorName: "BLUEWATER BAKERY & CAFE", vendorConfidence: "high" });
    expect(parse("Inkwell'Print & Copy\nTotal 5.00\n\nInkwell Print & Copy\nTotal 5.00", "DMY").vendorName).toBe("Inkwell Print & Copy");
    // A logo read letter by letter is no better spelling.
    expect(parse("STARBUCKS\nTotal 5.00\n\nS T A R B U C K S\nTotal 5.00", "DMY").vendorName).toBe("STARBUCKS");
  });

  it("a registered name or one read twice is high; the top line alone, medium; the email's sender, low", () => {
    expect(parse("NORTHWIND GROCERY LTD\n221 Baker Street\nTotal 5.00", "DMY").vendorConfidence).toBe("high");
    expect(parse("Corner Bakery\n221 Baker Street\nTotal 5.00", "DMY").vendorConfidence).toBe("medium");
    expect(parse("Corner Bakery\nTotal 5.00\n\nCorner Bakery\nTotal 5.00", "DMY").vendorConfidence).toBe("high");
    const forwarded = ["---------- Forwarded message ---------", "From: Corner Bakery <receipts@cornerbakery.com>",
      "Subject: Your receipt", "", "Total 5.00"].join("\n");
    expect(parse(forwarded, "DMY")).toMatchObject({ vendorName: "Corner Bakery", vendorConfidence: "low" });
  });

  it("an amount the arithmetic confirms is high; a labelled total, medium; the largest amount, low", () => {
    expect(parse("Subtotal 20.00\nGST 1.00\nTotal 21.00", "DMY").amountConfidence).toBe("high");
    expect(parse("Total 21.00", "DMY").amountConfidence).toBe("medium");
    expect(parse("COFFEE 3.50\nMUFFIN 2.75", "DMY").amountConfidence).toBe("low");
  });
});
