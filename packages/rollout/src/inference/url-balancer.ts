import { RolloutError } from '../errors.js';

/** How requests spread over several server URLs. A router URL alone needs neither. */
export type BalanceStrategy = 'round-robin' | 'least-loaded';

/**
 * Picks the server URL for the next request and tracks in-flight counts per URL.
 * round-robin cycles through the URLs; least-loaded takes the URL with the fewest requests in
 * flight (ties broken round-robin). `exclude` skips URLs that just failed, unless all did.
 */
export class UrlBalancer {
  readonly urls: readonly string[];
  private readonly inFlight: number[];
  private next = 0;

  constructor(
    urls: readonly string[],
    readonly strategy: BalanceStrategy = 'round-robin',
  ) {
    if (urls.length === 0) {
      throw new RolloutError(
        'INVALID_ARGUMENT',
        'engine urls is empty: give a router URL or at least one server URL',
      );
    }
    this.urls = urls.map(normaliseUrl);
    this.inFlight = urls.map(() => 0);
  }

  /** Index of the URL to use now. */
  pick(exclude: ReadonlySet<number> = new Set()): number {
    const n = this.urls.length;
    const candidates = [...Array(n).keys()]
      .map((k) => (this.next + k) % n)
      .filter((i) => !exclude.has(i));
    const order =
      candidates.length > 0 ? candidates : [...Array(n).keys()].map((k) => (this.next + k) % n);
    let best = order[0];
    if (this.strategy === 'least-loaded') {
      for (const i of order) if (this.inFlight[i] < this.inFlight[best]) best = i;
    }
    this.next = (best + 1) % n;
    return best;
  }

  acquire(i: number): void {
    this.inFlight[i] += 1;
  }

  release(i: number): void {
    this.inFlight[i] = Math.max(0, this.inFlight[i] - 1);
  }

  load(): number[] {
    return [...this.inFlight];
  }
}

/** 'localhost:30000/' -> 'http://localhost:30000'. Throws with the bad value when it is not a URL. */
export function normaliseUrl(raw: string): string {
  const withScheme = /^[a-z]+:\/\//i.test(raw) ? raw : `http://${raw}`;
  try {
    const u = new URL(withScheme);
    return `${u.protocol}//${u.host}${u.pathname.replace(/\/+$/, '')}`;
  } catch {
    throw new RolloutError(
      'INVALID_ARGUMENT',
      `engine url "${raw}" is not a valid URL (expected e.g. http://127.0.0.1:30000)`,
    );
  }
}
