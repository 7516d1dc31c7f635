import type { WeightDtype } from '@rl2/engine';
import type { DecoderModel } from '../model/decoder-model.js';
import { cachedForward, disposeKv, type KvBatch, mergeKv, selectKvRows } from './cached-forward.js';
import { fusedDecoder } from './fused-decoder.js';
import { pagedDecoder } from './paged-decoder.js';

/**
 * How the fused decoder lays out its KV cache: `paged` (default), blocks from a pool with a table
 * per row (appends copy nothing, a leaving row frees its blocks, rows of one prompt share its
 * blocks); `contiguous`, one left-padded [B, nKv, capacity, d] array per layer (`AppendKv`).
 */
export type KvCacheLayout = 'paged' | 'contiguous';

/**
 * How the generator runs the model on a batch of left-padded rows and keeps their KV cache
 * (`C`): the tfjs path (`cachedForward`, any backend, any linear/attention) or the fused native
 * decoder (one addon call per layer per step, on `native`). Logits come back as [B, V], valid
 * until the decoder's next prefill or step (the fused one reuses its buffer).
 */
export interface KvDecoder<C> {
  /**
   * Prompts, left-padded to one length by `pad[r]`; the logits of each row's last token.
   * `room`: the most new tokens a row may take (a capacity hint; the cache grows regardless).
   */
  prefill(
    tokens: number[][],
    positions: number[][],
    pad: number[],
    room?: number,
  ): Promise<{ logits: Float32Array; kv: C }>;
  /** One token per row at `positions[r]`. Consumes `kv`. */
  step(kv: C, tokens: number[], positions: number[]): Promise<{ logits: Float32Array; kv: C }>;
  /** Row-wise concatenation (shorter cache left-padded). Consumes both. */
  merge(a: C | undefined, b: C): C;
  /** Keeps rows `keep` in that order; undefined when none. Consumes `kv`. */
  select(kv: C, keep: number[]): C | undefined;
  dispose(kv: C | undefined): void;
}

/** The tfjs decoder: `cachedForward` with a tensor KV cache (what every backend and model runs). */
export function tfjsDecoder(model: DecoderModel): KvDecoder<KvBatch> {
  const logitsOf = async (t: { data(): Promise<unknown>; dispose(): void }) => {
    const data = (await t.data()) as Float32Array;
    t.dispose();
    return data;
  };
  return {
    async prefill(tokens, positions, pad) {
      const out = cachedForward(model, tokens, positions, pad);
      return { logits: await logitsOf(out.logits), kv: out.kv };
    },
    async step(kv, tokens, positions) {
      const out = cachedForward(
        model,
        tokens.map((t) => [t]),
        positions.map((p) => [p]),
        tokens.map(() => 0),
        kv,
      );
      disposeKv(kv, out.kv);
      return { logits: await logitsOf(out.logits), kv: out.kv };
    },
    merge: mergeKv,
    select: selectKvRows,
    dispose: (kv) => disposeKv(kv),
  };
}

/**
 * The fastest decoder the model and the active backend allow (`fused` false: the tfjs one);
 * `weightDtype` and `kvCache` are the fused decoder's (the tfjs one runs float32 over tensors).
 */
export function chooseDecoder(
  model: DecoderModel,
  fused = true,
  weightDtype: WeightDtype = 'float32',
  kvCache: KvCacheLayout = 'paged',
): KvDecoder<unknown> {
  const fusedOf = kvCache === 'paged' ? pagedDecoder : fusedDecoder;
  const f = fused ? (fusedOf(model, { weightDtype }) as KvDecoder<unknown> | undefined) : undefined;
  return (f ?? tfjsDecoder(model)) as KvDecoder<unknown>;
}
