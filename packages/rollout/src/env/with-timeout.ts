import { RolloutError } from '../errors.js';

/**
 * Settles like `work`, or rejects with ENV_TIMEOUT after `ms` (0 or Infinity: no limit).
 * The timed-out work keeps running in the background (JavaScript cannot kill a promise);
 * a synchronous infinite loop in an env cannot be interrupted at all.
 */
export function withTimeout<T>(work: Promise<T>, ms: number, what: string): Promise<T> {
  if (!(ms > 0) || ms === Number.POSITIVE_INFINITY) return work;
  let timer: ReturnType<typeof setTimeout> | undefined;
  const timeout = new Promise<never>((_, reject) => {
    timer = setTimeout(
      () => reject(new RolloutError('ENV_TIMEOUT', `${what} did not finish within ${ms} ms (raise rollout.env_timeout_ms or fix the env)`)),
      ms,
    );
  });
  return Promise.race([work, timeout]).finally(() => clearTimeout(timer));
}
