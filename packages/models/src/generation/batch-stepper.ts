import type { WeightDtype } from '@rl2/engine';
import type { SeededRng } from '@rl2/data';
import type { DecoderModel } from '../model/decoder-model.js';
import { chooseDecoder, type KvCacheLayout, type KvDecoder } from './kv-decoder.js';
import { type SampledToken, type SamplingParams, sampleRows } from './sample-token.js';

/** How one running row samples: its parameters, its own seeded stream, top logprobs asked for; `skip`: no token needed (aborted). */
export interface SamplingRow {
  readonly params: SamplingParams;
  readonly rng: SeededRng;
  readonly topLogprobs: number;
  readonly skip?: boolean;
}

/**
 * How the generator runs its batch of left-padded rows and their KV cache: prefill new rows
 * (appended to the batch), decode one token for every row, keep some rows, free the cache.
 * Each forward returns the token sampled for each row it ran (undefined where skipped). The
 * default is {@link localStepper}; tensor parallelism drives a group of processes
 * (`tensorParallelStepper`).
 */
export interface BatchStepper {
  /**
   * Prompts left-padded by `pad[r]` to one length; appended to the batch. `room`: the most
   * tokens any of these rows may still generate (a hint for sizing the cache).
   */
  prefill(
    tokens: number[][],
    positions: number[][],
    pad: number[],
    rows: readonly SamplingRow[],
    room?: number,
  ): Promise<(SampledToken | undefined)[]>;
  /** One token per running row (`tokens[r]` at `positions[r]`). */
  step(
    tokens: number[],
    positions: number[],
    rows: readonly SamplingRow[],
  ): Promise<(SampledToken | undefined)[]>;
  /** Keeps rows `keep`, in that order (none: the cache is freed). */
  select(keep: number[]): void;
  /** Frees the cache (after an error). */
  reset(): void;
}

/** `sampleRows` over `logits` [B, V] for the generator's rows. */
export function sampleBatch(
  logits: Float32Array,
  rows: readonly SamplingRow[],
): (SampledToken | undefined)[] {
  return sampleRows(
    logits,
    rows.map((r) => r.params),
    rows.map((r) => r.rng),
    rows.map((r) => r.topLogprobs),
    rows.map((r) => r.skip ?? false),
  );
}

/**
 * The one-process stepper: the fastest {@link KvDecoder} the model and backend allow (`fused`
 * false: the tfjs one), chosen whenever the batch is empty so a backend set after
 * `createGenerator` is used, and `sampleRows` over the full vocabulary. `weightDtype`: of the
 * fused decoder's weight matrices (the tfjs path always runs float32); `kvCache`: its cache layout.
 */
export function localStepper(
  model: DecoderModel,
  fused = true,
  weightDtype: WeightDtype = 'float32',
  kvCache: KvCacheLayout = 'paged',
): BatchStepper {
  let decoder: KvDecoder<unknown> | undefined;
  let kv: unknown;
  return {
    async prefill(tokens, positions, pad, rows, room) {
      if (kv === undefined) decoder = chooseDecoder(model, fused, weightDtype, kvCache);
      const out = await decoder!.prefill(tokens, positions, pad, room);
      kv = decoder!.merge(kv, out.kv);
      return sampleBatch(out.logits, rows);
    },
    async step(tokens, positions, rows) {
      const out = await decoder!.step(kv, tokens, positions);
      kv = out.kv;
      return sampleBatch(out.logits, rows);
    },
    select(keep) {
      if (kv !== undefined) kv = decoder!.select(kv, keep);
    },
    reset() {
      decoder?.dispose(kv);
      kv = undefined;
    },
  };
}
