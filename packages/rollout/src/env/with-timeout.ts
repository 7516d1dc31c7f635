import { RolloutError } from '../errors.js';

/**
 * Settles like `work`, or rejects with ENV_TIMEOUT after `ms` (0 or Infinity: no limit).
 * The timed-out work keeps running in the background (JavaScript cannot kill a promise); a
 * synchronous infinite loop in an env written inline cannot be interrupted at all, which is
 * why `loadEnvironment` runs env modules in worker threads instead.
 */
export function withTimeout<T>(work: Promise<T>, ms: number, what: string): Promise<T> {
  if (!(ms > 0) || ms === Number.POSITIVE_INFINITY) return work;
  let timer: ReturnType<typeof setTimeout> | undefined;
  const timeout = new Promise<never>((_, reject) => {
    timer = setTimeout(
      () =>
        reject(
          new RolloutError(
            'ENV_TIMEOUT',
            `${what} did not finish within ${ms / 1000} s (raise rollout.env_timeout_s or fix the env)`,
          ),
        ),
      ms,
    );
  });
  return Promise.race([work, timeout]).finally(() => clearTimeout(timer));
}
