/** Machine-readable reasons an @rl2/models call can fail. Later modules extend this union. */
export type ModelsErrorCode =
  | 'INVALID_ARGUMENT'
  | 'UNSUPPORTED_CONFIG'
  | 'CHECKPOINT_ERROR'
  | 'SHAPE_MISMATCH'
  /** A tensor-parallel op failed partway: the other ranks wait inside its collectives. */
  | 'GROUP_OUT_OF_STEP'
  /** A bounded resource (the paged KV cache's segments) would be exceeded. */
  | 'RESOURCE_EXHAUSTED';

/** Base error of @rl2/models: every message names the offending value and how to fix it. */
export class ModelsError extends Error {
  override readonly name = 'ModelsError';
  constructor(
    readonly code: ModelsErrorCode,
    message: string,
  ) {
    super(message);
  }
}
