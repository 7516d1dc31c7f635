/** Machine-readable reasons an @rl2/engine call can fail. */
export type EngineErrorCode = 'INVALID_ARGUMENT' | 'SHAPE_MISMATCH' | 'BACKEND_UNAVAILABLE';

/** Base error of @rl2/engine: every message names the offending value and how to fix it. */
export class EngineError extends Error {
  override readonly name = 'EngineError';
  constructor(
    readonly code: EngineErrorCode,
    message: string,
  ) {
    super(message);
  }
}
