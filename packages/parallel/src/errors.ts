/**
 * Machine-readable reasons an @rl2/parallel call can fail.
 * - `INVALID_ARGUMENT`: a value passed in code is out of range or the wrong shape.
 * - `LAUNCH_ENV`: launcher environment variables are missing or contradict each other.
 * - `RANK_FAILED`: a rank started by `launch` exited non-zero (its exit code and stderr tail are in the message).
 * - `INTERRUPTED`: `launch` was aborted or got SIGINT/SIGTERM/SIGHUP and stopped every rank (see {@link InterruptedError}).
 * - `RENDEZVOUS`: ranks could not meet at MASTER_ADDR:MASTER_PORT.
 * - `COLLECTIVE_TIMEOUT`: a collective waited longer than its timeout; the message names the ranks that never arrived.
 * - `PEER_LOST`: the connection to another rank closed while it was needed.
 * - `MESH`: the world size does not fit the requested ddp/fsdp/tp/cp layout.
 * - `LAYOUT`: a tensor does not fit a sharded layout (e.g. kv_heads % tp, sequence length % 2*cp).
 */
export type ParallelErrorCode =
  | 'INVALID_ARGUMENT'
  | 'LAUNCH_ENV'
  | 'RANK_FAILED'
  | 'INTERRUPTED'
  | 'RENDEZVOUS'
  | 'COLLECTIVE_TIMEOUT'
  | 'PEER_LOST'
  | 'MESH'
  | 'LAYOUT';

/** Base error of @rl2/parallel: every message names the offending value and how to fix it. */
export class ParallelError extends Error {
  override readonly name = 'ParallelError';
  constructor(
    readonly code: ParallelErrorCode,
    message: string,
  ) {
    super(message);
  }
}

/** A rank started by `launch` failed; every other rank was stopped. */
export class RankFailedError extends ParallelError {
  constructor(
    readonly rank: number,
    readonly exitCode: number | null,
    readonly signal: string | null,
    readonly stderrTail: string,
  ) {
    const how = exitCode !== null ? `exit code ${exitCode}` : `signal ${signal}`;
    const tail = stderrTail.trim()
      ? `\n--- last stderr of rank ${rank} ---\n${stderrTail.trimEnd()}`
      : ' (no stderr output)';
    super('RANK_FAILED', `rank ${rank} failed with ${how}; every other rank was stopped.${tail}`);
  }
}

/**
 * `launch` got a signal (or its abort signal fired): on SIGINT / SIGTERM every rank was passed
 * the signal (trainers save a checkpoint, then exit), on SIGHUP or an abort every rank was stopped.
 */
export class InterruptedError extends ParallelError {
  constructor(
    /** The signal `launch` got; null for an abort. */
    readonly signal: NodeJS.Signals | null,
    message: string,
  ) {
    super('INTERRUPTED', message);
  }
}
