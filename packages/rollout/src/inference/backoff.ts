import { RolloutError } from '../errors.js';

/** Exponential backoff between retries: delay_k = min(initialMs * factor^k, maxMs), k = 0, 1, ... */
export interface BackoffOptions {
  /** Number of retries after the first attempt (0: try once). Default 3. */
  retries?: number;
  /** Delay before the first retry, ms. Default 200. */
  initialMs?: number;
  /** Growth per retry. Default 2. */
  factor?: number;
  /** Cap on one delay, ms. Default 5000. */
  maxMs?: number;
}

/** The delays (ms) waited before each retry: [retries]. Pure, so tests can check the schedule. */
export function backoffDelays(options: BackoffOptions = {}): number[] {
  const { retries = 3, initialMs = 200, factor = 2, maxMs = 5000 } = options;
  for (const [key, v] of Object.entries({ retries, initialMs, factor, maxMs })) {
    if (!Number.isFinite(v) || v < 0) {
      throw new RolloutError(
        'INVALID_ARGUMENT',
        `backoff.${key} must be a non-negative number, got ${v}`,
      );
    }
  }
  return Array.from({ length: Math.floor(retries) }, (_, k) =>
    Math.min(initialMs * factor ** k, maxMs),
  );
}

/** Resolves after `ms` (or rejects early when `signal` aborts). */
export function sleep(ms: number, signal?: AbortSignal): Promise<void> {
  return new Promise((resolve, reject) => {
    if (signal?.aborted) return reject(signal.reason);
    const onAbort = () => {
      clearTimeout(timer);
      reject(signal?.reason);
    };
    const timer = setTimeout(() => {
      signal?.removeEventListener('abort', onAbort);
      resolve();
    }, ms);
    signal?.addEventListener('abort', onAbort, { once: true });
  });
}
