import { readdirSync, readFileSync } from "node:fs";
import { parse } from "csv-parse/sync";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { referenceDataSql } from "../scripts/reference-data-sql.js";
import { createTenant, dataOf, errorOf, startHarness, type Harness, type Tenant } from "./helpers/harness.js";

let h: Harness;
let a: Tenant;
beforeAll(async () => {
  h = await startHarness();
  a = await createTenant(h);
});
afterAll(() => h?.close());

const csv = (file: string) => parse(readFileSync(new URL(`../data/${file}`, import.meta.url), "utf8"), { columns: true, bom: true, skip_empty_lines: true }) as Record<string, string>[];
const LIST = `query($o: UUID!, $search: String, $limit: Int, $offset: Int, $classification: String, $accountType: String) {
  listTaxCodes(organizationId: $o, search: $search, limit: $limit, offset: $offset, classification: $classification, accountType: $accountType) {
    totalCount pageSize offset items { id code name classification accountType } } }`;
const list = async (vars: Record<string, unknown> = {}) => dataOf(await h.gql(LIST, { o: a.organizationId, ...vars }, a.apiKey), "listTaxCodes");

describe("listTaxCodes", () => {
  it("has exactly the GIFI codes of data/gifi.csv, each with its name, classification and account type", async () => {
    const rows = csv("gifi.csv");
    expect(rows.length).toBe(719);
    const page = await list({ limit: 200 });
    expect(page.totalCount).toBe(rows.length);
    const all: any[] = [];
    for (let offset = 0; offset < rows.length; offset += 200) all.push(...(await list({ limit: 200, offset })).items);
    expect(all.map((x) => [x.code, x.name, x.classification, x.accountType]))
      .toEqual(rows.map((r) => [r.code, r.name, r.classification, r.account_type]));
  });

  it("searches code and name case-insensitively, filters, and pages", async () => {
    expect((await list({ search: "8715" })).items.map((x: any) => x.name)).toEqual(["Bank charges"]);
    const taxes = await list({ search: "TAXES PAYABLE" });
    expect(taxes.items.map((x: any) => x.code)).toContain("2680");
    expect((await list({ search: "%" })).totalCount).toBe(0);
    expect((await list({ accountType: "bank" })).items.map((x: any) => x.code)).toEqual(["1000", "1001", "1002", "1003", "1004", "1005", "1006"]);
    expect((await list({ classification: "equity", limit: 2, offset: 1 }))).toMatchObject({ pageSize: 2, offset: 1 });
    expect(errorOf(await h.gql(LIST, { o: a.organizationId, limit: 0 }, a.apiKey)).code).toBe("BAD_USER_INPUT");
    expect(errorOf(await h.gql(LIST, { o: a.organizationId }))).toEqual({ message: "Authentication Required.", code: "UNAUTHENTICATED" });
  });
});

describe("reference data in the migration", () => {
  it("is exactly what scripts/reference-data-sql.ts generates from data/*.csv", () => {
    const dir = new URL("../migrations/committed/", import.meta.url);
    const file = readdirSync(dir).find((f) => f.startsWith("000002-"))!;
    expect(readFileSync(new URL(file, dir), "utf8")).toContain(referenceDataSql());
  });
});

describe("listSalesTaxCodes", () => {
  it("has every code of data/sales_tax_codes.csv with its rate as a decimal string", async () => {
    const rows = csv("sales_tax_codes.csv");
    const codes = dataOf(await h.gql("query($o: UUID!) { listSalesTaxCodes(organizationId: $o) { code name rate jurisdiction recoverable } }",
      { o: a.organizationId }, a.apiKey), "listSalesTaxCodes");
    expect(codes).toHaveLength(rows.length);
    const byCode = Object.fromEntries(codes.map((c: any) => [c.code, c]));
    for (const r of rows) {
      expect(byCode[r.code]).toMatchObject({ name: r.name, jurisdiction: r.jurisdiction, recoverable: r.recoverable });
      expect(Number(byCode[r.code].rate)).toBe(Number(r.rate));
    }
    expect(byCode.QST.rate).toBe("9.975");
    expect(byCode.GST.rate).toBe("5.000");
    expect(byCode.HST_ON.rate).toBe("13.000");
  });
});
