/** Latency figures of a set of samples in milliseconds (nearest-rank percentiles). */
export interface Latency { n: number; p50: number | null; p99: number | null; max: number | null }

export function latency(samples: number[]): Latency {
  if (samples.length === 0) return { n: 0, p50: null, p99: null, max: null };
  const sorted = [...samples].sort((a, b) => a - b);
  const at = (q: number) => Math.round(sorted[Math.min(sorted.length - 1, Math.ceil(q * sorted.length) - 1)]);
  return { n: sorted.length, p50: at(0.5), p99: at(0.99), max: Math.round(sorted[sorted.length - 1]) };
}

/** Milliseconds as a person reads them: 840 ms, 12.3 s. */
export function ms(value: number | null | undefined): string {
  if (value === null || value === undefined) return "-";
  return value < 1000 ? `${Math.round(value)} ms` : `${(value / 1000).toFixed(1)} s`;
}

export const mb = (kb: number) => Math.round(kb / 1024);
