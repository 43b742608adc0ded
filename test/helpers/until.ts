/**
 * Waits until `check` gives something truthy (polling every 50 ms) and returns it; fails naming
 * `what` after `ms`.
 */
export async function until<T>(what: string, check: () => T | Promise<T>, ms = 20_000): Promise<NonNullable<T>> {
  for (const end = Date.now() + ms; ; await new Promise((resolve) => setTimeout(resolve, 50))) {
    const found = await check();
    if (found) return found as NonNullable<T>;
    if (Date.now() > end) throw new Error(`timed out waiting for ${what}`);
  }
}
