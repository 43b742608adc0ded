// The unseen real-scan sample (scripts/receipts/sroie-sample.ts): labels normalised as the
// development set's, a seeded shuffle whose halves never overlap, development scans left out.
import { mkdirSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import os from "node:os";
import path from "node:path";
import { afterAll, describe, expect, it } from "vitest";
import { buildSample, labelCents, labelDate } from "../scripts/receipts/sroie-sample.ts";

const root = mkdtempSync(path.join(os.tmpdir(), "sroie-sample-test-"));
afterAll(() => rmSync(root, { recursive: true, force: true }));

describe("the unseen SROIE sample", () => {
  it("reads the labels' dates day-first and their totals to the cent", () => {
    expect(labelDate("25/12/2018")).toBe("2018-12-25");
    expect(labelDate("03-01-18")).toBe("2018-01-03");
    expect(labelDate("4/22/2018")).toBe("2018-04-22"); // no 22nd month: month-first
    expect(labelDate("20180428")).toBe("2018-04-28");
    expect(labelDate("20122018")).toBe("2018-12-20");
    expect(labelDate("(06/12/2016)")).toBe("2016-12-06");
    expect(labelDate("10 MAR 2018")).toBe("2018-03-10");
    expect(labelDate("OCT 9, 2018")).toBe("2018-10-09");
    expect(labelDate("31/02/2018")).toBeNull();
    expect(labelCents("RM 1,057.40")).toBe(105740);
    expect(labelCents("-6.42")).toBe(-642);
    expect(labelCents("9.5")).toBe(950);
    expect(labelCents("9,50")).toBe(950);
    expect(labelCents("")).toBeNull();
  });

  it("shuffles with the seed, takes disjoint slices, leaves out development scans and unreadable labels", () => {
    const from = path.join(root, "split");
    const dev = path.join(root, "dev");
    for (const dir of ["img", "key", "box"]) mkdirSync(path.join(from, dir), { recursive: true });
    mkdirSync(path.join(dev, "images"), { recursive: true });
    for (let n = 0; n < 10; n++) {
      const name = String(n).padStart(3, "0");
      writeFileSync(path.join(from, "img", `${name}.jpg`), `scan ${n}`);
      writeFileSync(path.join(from, "box", `${name}.csv`), `1,1,2,1,2,2,1,2,SHOP ${n}\r\n`);
      const total = n === 7 ? "" : `${n}.50`;
      writeFileSync(path.join(from, "key", `${name}.json`), JSON.stringify({ company: `SHOP ${n}`, date: "01/02/2018", total }));
    }
    writeFileSync(path.join(dev, "images", "X1.jpg"), "scan 3");
    const first = buildSample(from, path.join(root, "a"), 5, 0, 1, dev);
    const second = buildSample(from, path.join(root, "b"), 5, 5, 1, dev);
    expect(first.development).toBe(1);
    const ids = (dir: string) => (JSON.parse(readFileSync(path.join(root, dir, "labels.json"), "utf8")) as { id: string }[]).map((l) => l.id);
    const all = [...ids("a"), ...ids("b")];
    expect(new Set(all).size).toBe(all.length);
    expect(all).not.toContain("train-003");
    expect(all).not.toContain("train-007");
    expect(first.unreadable.length + second.unreadable.length).toBe(1);
    expect(all).toHaveLength(8);
    expect(buildSample(from, path.join(root, "c"), 5, 0, 1, dev).labels).toBe(first.labels);
    expect(ids("c")).toEqual(ids("a"));
    // A development set named but absent, or a folder already holding a sample, is refused.
    expect(() => buildSample(from, path.join(root, "d"), 5, 0, 1, path.join(root, "absent"))).toThrow(/absent/);
    expect(() => buildSample(from, path.join(root, "a"), 5, 0, 1, dev)).toThrow(/not empty/);
  });
});
