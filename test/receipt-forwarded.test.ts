import { describe, expect, it } from "vitest";
import { unwrapForwarded, vendorFromHeaders } from "../src/receipts/extraction/forwarded.js";
import { parseReceiptText } from "../src/receipts/extraction/index.js";

/* Receipts a person forwards from a phone (invented messages). */
const forwarded = [
  "Sent from my iPhone",
  "",
  "Begin forwarded message:",
  "",
  "> From: Corner Bakery <receipts@cornerbakery.example>",
  "> Date: March 5, 2025 at 8:14:02 AM EST",
  "> To: olive@maple.test",
  "> Subject: Your receipt from Corner Bakery",
  ">",
  "> CORNER BAKERY CAFE",
  "> 120 King St W, Toronto ON M5X 1A9",
  "> 03/05/2025 08:12",
  "> Latte 5.25",
  "> Croissant 3.95",
  "> Subtotal 9.20",
  "> HST 13% 1.20",
  "> Total CAD 10.40",
  "> Visa 10.40",
].join("\n");

describe("a forwarded receipt", () => {
  it("is read without the signature, the forward marker and the forwarded headers", () => {
    const parsed = parseReceiptText(forwarded, { dateOrder: "MDY" });
    expect(parsed).toMatchObject({ vendorName: "CORNER BAKERY CAFE", amount: "10.40", amountConfidence: "high", currency: "CAD", dateReadings: ["2025-03-05"] });
  });

  it("the sender or the subject names the vendor when the receipt's text does not", () => {
    const bare = "---------- Forwarded message ---------\nFrom: Lumen Books <orders@lumenbooks.example>\nDate: Tue, Mar 4, 2025\nSubject: Order 1042\nTo: me@maple.test\n\nOrder 1042\n1 x Ledger paper 14.00\nTotal 14.00";
    expect(parseReceiptText(bare, { dateOrder: "auto" }).vendorName).toBe("Lumen Books");
    expect(vendorFromHeaders("receipts@harbourcoffee.example", null)).toBe("Harbourcoffee");
    expect(vendorFromHeaders("\"No Reply\" <no-reply@mail.example>", "Your receipt from Harbour Coffee")).toBe("Harbour Coffee");
    expect(vendorFromHeaders("olive@gmail.com", null)).toBeNull();
  });

  it("a receipt that prints no date takes the forwarded message's date, trusted little", () => {
    const body = ["", "Order 1042", "1 x Ledger paper 14.00", "Total 14.00"];
    const headers: [string, string][] = [
      ["---------- Forwarded message ---------\nFrom: Lumen Books <orders@lumenbooks.example>\nDate: Tue, Mar 4, 2025 at 9:14 AM", "2025-03-04"],
      ["Begin forwarded message:\n\n> From: Lumen Books <orders@lumenbooks.example>\n> Date: November 24, 2026 at 8:05:17 AM EST", "2026-11-24"],
      ["FYI\n________________________________\nFrom: Lumen Books <orders@lumenbooks.example>\nSent: Monday, March 3, 2025 8:05 AM", "2025-03-03"],
    ];
    for (const [forward, day] of headers) {
      const parsed = parseReceiptText([forward, "Subject: Your order", ...body].join("\n"), { dateOrder: "auto" });
      expect(parsed).toMatchObject({ dateReadings: [day], dateConfidence: "low", amount: "14.00" });
    }
    // A forward of a forward: the shop's own message's date, not the partner's forward.
    const twice = ["---------- Forwarded message ---------", "From: Sam <sam@maple.test>", "Date: Fri, Dec 5, 2025 at 9:00 AM", "Subject: Fwd: Your order",
      "", "---------- Forwarded message ---------", "From: Lumen Books <orders@lumenbooks.example>", "Date: Sun, Nov 23, 2025 at 4:12 PM", "Subject: Your order", ...body];
    expect(parseReceiptText(twice.join("\n"), { dateOrder: "auto" })).toMatchObject({ vendorName: "Lumen Books", dateReadings: ["2025-11-23"] });
    // A date the receipt prints wins over the day it was forwarded.
    const printed = parseReceiptText([headers[0][0], "Subject: Your order", "", "Order 1042 - 03/01/2025", "Total 14.00"].join("\n"), { dateOrder: "MDY" });
    expect(printed.dateReadings).toEqual(["2025-03-01"]);
  });

  it("a receipt's own Date: or To: line at the top is not taken for an email header", () => {
    expect(unwrapForwarded(["DATE: 07/08/2019", "TOTAL 12.00"]).lines).toEqual(["DATE: 07/08/2019", "TOTAL 12.00"]);
    expect(unwrapForwarded(["From: a@b.example", "Subject: x", "TOTAL 12.00"])).toEqual({ lines: ["TOTAL 12.00"], sender: "a@b.example", subject: "x", date: null });
  });

  it("the forwarder's note above the marker is not the receipt: the vendor then comes from the forwarded sender", () => {
    const text = ["For the books.", "", "Sent from my iPhone", "", "Begin forwarded message:", "",
      "From: Corner Bakery Cafe <receipts@cornerbakerycafe.com>", "Date: November 24, 2026 at 8:05:17 AM EST",
      "Subject: Your receipt from Corner Bakery Cafe", "", "Thanks for visiting!", "Order #4471 - Nov 24, 2026 8:04 AM",
      "Americano (L) 4.25", "Subtotal 4.25", "HST 13% 0.55", "Total 4.80 CAD"].join("\n");
    expect(parseReceiptText(text, { dateOrder: "auto" })).toMatchObject({ vendorName: "Corner Bakery Cafe", vendorConfidence: "low",
      amount: "4.80", amountConfidence: "high", currency: "CAD", dateReadings: ["2026-11-24"] });
  });

  it("a receipt above a quoted thread stays; an Outlook forward's note goes too", () => {
    const invoice = ["NORTHWIND OFFICE SUPPLY LTD", "Invoice 1042", "Toner 54.20", "Total 54.20", "",
      "-----Original Message-----", "From: Sam <sam@example.net>", "Subject: toner?", "Do you have toner?"];
    expect(unwrapForwarded(invoice).lines.slice(0, 4)).toEqual(invoice.slice(0, 4));
    const outlook = ["For the books.", "________________________________", "From: Corner Bakery <receipts@cornerbakery.com>",
      "Sent: Monday, March 3, 2025 8:05 AM", "Subject: Your receipt", "Total 10.40"];
    expect(unwrapForwarded(outlook).lines).toEqual(["Total 10.40"]);
  });

  it("a receipt's rule of dashes before its Date: line is no forward marker; Outlook's rule before From: still is", () => {
    const receipt = ["DEPANNEUR MONT-ROYAL", "----------------------------------------", "Date: Nov 19, 2023 Time: 15:33", "Store 085 Reg 9", "Total 23.44"];
    expect(unwrapForwarded(receipt).lines).toEqual(receipt);
    expect(parseReceiptText(receipt.join("\n"), { dateOrder: "auto" }).dateReadings).toEqual(["2023-11-19"]);
    const outlook = ["FYI", "________________________________", "From: Corner Bakery <receipts@cornerbakery.com>", "Sent: Monday, March 3, 2025 8:05 AM",
      "To: sam@example.net", "Subject: Your receipt", "Total 10.40"];
    expect(unwrapForwarded(outlook)).toMatchObject({ lines: ["Total 10.40"],
      sender: "Corner Bakery <receipts@cornerbakery.com>", subject: "Your receipt" });
  });
});
