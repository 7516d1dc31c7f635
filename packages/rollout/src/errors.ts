/**
 * Machine-readable reasons an @rl2/rollout call can fail.
 * - INVALID_ARGUMENT: a config value or argument is out of range (the message names it).
 * - ENGINE_UNREACHABLE: no inference server answered at the named URL(s) after all retries.
 * - ENGINE_HTTP: a server answered with an HTTP error or a malformed body.
 * - ENGINE_TIMEOUT: a request to the named URL took longer than `timeoutMs`.
 * - ENGINE_ABORTED: the caller aborted the request (AbortSignal).
 * - ENGINE_FAILED: an in-process engine (generator) threw while generating.
 * - ENV_LOAD: an environment module could not be loaded or lacks `step`.
 * - ENV_STEP: an environment's `step`/`reset` threw or returned a malformed value.
 * - ENV_TIMEOUT: an environment's `step`/`reset` did not settle within `timeoutMs` (rollout.env_timeout_s).
 * - ROLLOUT_FAILED: the rollout stopped because samples failed and `onSampleError` is 'stop' (rollout.on_sample_error).
 */
export type RolloutErrorCode =
  | 'INVALID_ARGUMENT'
  | 'ENGINE_UNREACHABLE'
  | 'ENGINE_HTTP'
  | 'ENGINE_TIMEOUT'
  | 'ENGINE_ABORTED'
  | 'ENGINE_FAILED'
  | 'ENV_LOAD'
  | 'ENV_STEP'
  | 'ENV_TIMEOUT'
  | 'ROLLOUT_FAILED';

/** Base error of @rl2/rollout: every message names the offending value and how to fix it. */
export class RolloutError extends Error {
  override readonly name = 'RolloutError';
  constructor(
    readonly code: RolloutErrorCode,
    message: string,
    options?: { cause?: unknown },
  ) {
    super(message, options);
  }
}
