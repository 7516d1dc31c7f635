import { type LoadedModel, loadTensorParallelModel } from '@rl2/models';
import type { ProcessGroup } from '@rl2/parallel';
import { RolloutError } from '../errors.js';

// What the lead of a tensor-parallel engine tells its followers once they have left
// `followTensorParallel` (the lead closed its stepper): load other weights, stop, load a LoRA
// adapter (text: JSON {name, path, slot}) or unload one (text: its name).
export const RELOAD = 1;
export const STOP = 2;
export const LOAD_LORA = 3;
export const UNLOAD_LORA = 4;

/** Broadcast by the lead: [op, text length] then the text as UTF-16 code units (exact in float32). */
export function sendCommand(tp: ProcessGroup, op: number, text = ''): void {
  tp.broadcast(Float32Array.from([op, text.length]), 0);
  if (text.length > 0)
    tp.broadcast(
      Float32Array.from(text, (_, i) => text.charCodeAt(i)),
      0,
    );
}

/** The followers' side of {@link sendCommand}. */
export function receiveCommand(tp: ProcessGroup): { op: number; text: string } {
  const [op, n] = tp.broadcast(new Float32Array(2), 0) as unknown as [number, number];
  const codes = n > 0 ? tp.broadcast(new Float32Array(n), 0) : new Float32Array(0);
  return { op, text: String.fromCharCode(...codes) };
}

/** Parameter bytes of a model (float32). */
export function paramBytes(loaded: LoadedModel): number {
  let n = 0;
  for (const t of loaded.model.params.values()) n += t.size * 4;
  return n;
}

/** Shards every rank of the group loaded, and each rank's parameter bytes. */
export interface AgreedLoad {
  loaded: LoadedModel;
  rankBytes: number[];
}

/**
 * Every rank of `tp` runs `load` (its part of `what`, a folder), then they agree (one all-reduce): all
 * succeeded, or every rank `free`s what it loaded and throws, so the group keeps serving what
 * it served together. The error names the ranks that failed; each failed rank's own error is
 * `log`ged. Also returns each rank's `bytesOf` its part.
 */
export async function agreeOn<T>(
  what: string,
  tp: ProcessGroup,
  log: (line: string) => void,
  load: () => T | Promise<T>,
  bytesOf: (value: T) => number,
  free: (value: T) => void,
): Promise<{ value: T; rankBytes: number[] }> {
  let value: T | undefined;
  let error: Error | undefined;
  try {
    value = await load();
  } catch (e) {
    error = e as Error;
    if (tp.rank !== 0) log(`rank ${tp.rank}: cannot load ${what}: ${error.message}`);
  }
  // [failed per rank..., bytes div 2^24 per rank..., bytes mod 2^24 per rank...]: exact in float32
  const votes = new Float32Array(3 * tp.size);
  const bytes = value === undefined ? 0 : bytesOf(value);
  votes[tp.rank] = error ? 1 : 0;
  votes[tp.size + tp.rank] = Math.floor(bytes / 2 ** 24);
  votes[2 * tp.size + tp.rank] = bytes % 2 ** 24;
  tp.allReduce(votes, 'sum');
  const failed = [...votes.subarray(0, tp.size)].flatMap((v, r) => (v > 0 ? [r] : []));
  if (failed.length === 0 && value !== undefined) {
    const rankBytes = Array.from(
      { length: tp.size },
      (_, r) => (votes[tp.size + r] as number) * 2 ** 24 + (votes[2 * tp.size + r] as number),
    );
    return { value, rankBytes };
  }
  if (value !== undefined) free(value);
  throw new RolloutError(
    'INVALID_ARGUMENT',
    error?.message ??
      `tp rank(s) ${failed.join(', ')} could not load their part of ${what} (see their log)`,
  );
}

/** Every rank of `tp` loads its shards of the checkpoint `dir`, all or none (see {@link agreeOn}). */
export async function loadAgreed(
  dir: string,
  tp: ProcessGroup,
  log: (line: string) => void,
): Promise<AgreedLoad> {
  const { value, rankBytes } = await agreeOn(
    dir,
    tp,
    log,
    () => loadTensorParallelModel(dir, tp),
    paramBytes,
    (loaded) => {
      for (const v of loaded.model.params.values()) v.dispose();
    },
  );
  return { loaded: value, rankBytes };
}
