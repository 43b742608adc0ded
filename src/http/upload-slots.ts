/** The most uploads under way at once: per credential, per organization, and in all. */
export interface UploadLimits {
  perCredential: number;
  perOrganization: number;
  total: number;
}

/** One upload's place, held until it is settled. */
export interface UploadPlace {
  /** Counts it against its organization too, once that is known: false (and not counted) when the organization has its share already. */
  forOrganization(organizationId: string): boolean;
  /** Gives the place back (once; later calls do nothing). */
  release(): void;
}

/**
 * Places for uploads under way in this process: a few per credential (API key or user) and a few
 * more per organization, so that no caller, and no tenant with many keys, takes them all; and a
 * number in all, so that uploads together cannot take the event loop (every byte is parsed,
 * hashed and written on it) or the memory from the API's other requests.
 */
export class UploadSlots {
  private inAll = 0;
  /** Uploads under way by `credential:<id>` and `organization:<id>`. */
  private readonly held = new Map<string, number>();

  constructor(readonly limits: UploadLimits) {}

  /** A place for one more upload of `credential`, or which limit is reached. */
  take(credential: string): UploadPlace | { full: "credential" | "all" } {
    if (this.count(`credential:${credential}`) >= this.limits.perCredential) return { full: "credential" };
    if (this.inAll >= this.limits.total) return { full: "all" };
    const mine = [`credential:${credential}`];
    this.add(mine[0], 1);
    this.inAll++;
    let released = false;
    return {
      forOrganization: (organizationId) => {
        const key = `organization:${organizationId}`;
        if (released || mine.includes(key)) return !released;
        if (this.count(key) >= this.limits.perOrganization) return false;
        this.add(key, 1);
        mine.push(key);
        return true;
      },
      release: () => {
        if (released) return;
        released = true;
        this.inAll--;
        for (const key of mine) this.add(key, -1);
      },
    };
  }

  private count(key: string): number {
    return this.held.get(key) ?? 0;
  }

  private add(key: string, n: number): void {
    const left = this.count(key) + n;
    if (left > 0) this.held.set(key, left);
    else this.held.delete(key);
  }
}
