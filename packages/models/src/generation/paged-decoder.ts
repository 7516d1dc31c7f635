import { decodeKernels } from '@rl2/engine';
import type { DecoderModel } from '../model/decoder-model.js';
import { BlockPool } from './block-pool.js';
import { type FusedDecoderOptions, fusable, preparedWeights, ropeRows } from './fused-decoder.js';
import type { KvDecoder } from './kv-decoder.js';

/** One row of a {@link PagedKv}: its blocks in token order and the tokens it holds. */
export interface PagedRow {
  blocks: number[];
  length: number;
}

/** A KV cache in blocks: rows over the decoder's {@link BlockPool} (rows may share blocks). */
export interface PagedKv {
  rows: PagedRow[];
}

/** Options of `pagedDecoder`. */
export interface PagedDecoderOptions extends FusedDecoderOptions {
  /** Tokens per KV block (default 16). */
  blockSize?: number;
  /** Blocks per pool segment, the unit the pool grows and shrinks by (default 32). */
  segmentBlocks?: number;
}

/** The paged decoder, with its pool (for the KV bytes it holds). */
export type PagedDecoder = KvDecoder<PagedKv> & { readonly pool: BlockPool };

/**
 * `fusedDecoder` over a KV cache in fixed-size blocks (vLLM's PagedAttention, Kwon et al. 2023,
 * https://arxiv.org/abs/2309.06180): each row has a block table into one pool, so an append
 * writes into the row's last block (a new one every `blockSize` tokens) and copies nothing, rows
 * joining or leaving move no keys, and a row leaving frees its blocks. A prompt (a GRPO group's,
 * sent once per response) is prefilled once: its blocks and last logits stay held while a row
 * shares them, so rows of the same prompt in this prefill or a later one reference its blocks;
 * a row gets its own copy of a shared, partly filled last block before writing into it.
 * Rows need no left padding: each attends to its own tokens. Undefined where `fusedDecoder` is.
 */
export function pagedDecoder(
  model: DecoderModel,
  options: PagedDecoderOptions = {},
): PagedDecoder | undefined {
  const kernels = decodeKernels();
  if (!kernels || !fusable(model)) return undefined;
  const c = model.config;
  const pool = new BlockPool({
    layers: c.numLayers,
    kvHeads: c.numKvHeads,
    headDim: c.headDim,
    blockSize: options.blockSize,
    segmentBlocks: options.segmentBlocks,
  });
  const bs = pool.blockSize;
  const weights = preparedWeights(model, options.weightDtype ?? 'float32');
  let logitsBuffer = new Float32Array(0);
  let sharedLogits = new Float32Array(0);
  const dims = (rows: number, tokens: number) => ({
    rows,
    hidden: c.hiddenSize,
    heads: c.numHeads,
    kvHeads: c.numKvHeads,
    headDim: c.headDim,
    intermediate: c.intermediateSize,
    tokens,
    vocab: c.vocabSize,
  });

  /** Logits [B, V] of `s` tokens per row (after `pad[r]` padding), written from each row's length. */
  const forward = (
    tokens: number[],
    positions: number[],
    rows: PagedRow[],
    s: number,
    pad: number[],
  ) => {
    const b = rows.length;
    const tableWidth = Math.max(1, ...rows.map((r) => r.blocks.length));
    const table = new Int32Array(b * tableWidth).fill(-1);
    rows.forEach((r, i) => {
      table.set(r.blocks, i * tableWidth);
    });
    const { cos, sin } = ropeRows(positions, model.invFreq);
    if (logitsBuffer.length < b * c.vocabSize) logitsBuffer = new Float32Array(b * c.vocabSize);
    const logits = logitsBuffer.subarray(0, b * c.vocabSize);
    const caches = {
      k: pool.k,
      v: pool.v,
      blockSize: bs,
      segmentBlocks: pool.segmentBlocks,
      table,
      tableWidth,
      lens: Int32Array.from(rows, (r) => r.length),
      padLeft: Int32Array.from(pad),
    };
    kernels.forwardPaged(
      weights(),
      Int32Array.from(tokens),
      dims(b, s),
      c.rmsNormEps,
      cos,
      sin,
      caches,
      logits,
    );
    return logits;
  };

  /** Blocks for `n` more tokens of `row`: its own copy of a shared, partly filled last block, then new ones. */
  const reserve = (row: PagedRow, n: number) => {
    const fill = row.length % bs;
    const last = row.blocks.at(-1);
    if (n > 0 && fill > 0 && last !== undefined && pool.count(last) > 1) {
      const own = pool.alloc();
      pool.copy(last, own, fill);
      pool.release(last);
      row.blocks[row.blocks.length - 1] = own;
    }
    while (row.blocks.length * bs < row.length + n) row.blocks.push(pool.alloc());
  };

  /** A row holding `row`'s blocks too. */
  const share = (row: PagedRow): PagedRow => {
    for (const id of row.blocks) pool.retain(id);
    return { blocks: [...row.blocks], length: row.length };
  };

  const free = (rows: PagedRow[]) => {
    for (const row of rows) for (const id of row.blocks) pool.release(id);
  };

  /**
   * Prompts held for sharing, by their tokens: a row of the prompt's blocks (the entry's own
   * reference) and the logits of its last token. An entry goes once no row shares its first block.
   */
  const prompts = new Map<string, { row: PagedRow; logits: Float32Array }>();
  const forget = (all: boolean) => {
    for (const [key, entry] of prompts) {
      if (!all && pool.count(entry.row.blocks[0]!) > 1) continue;
      free([entry.row]);
      prompts.delete(key);
    }
  };

  /** Prefills the first row of each prompt in `keys` not held yet, into `prompts`. */
  const prefillNew = (tokens: number[][], positions: number[][], pad: number[], keys: string[]) => {
    const todo = [...new Map(keys.map((k, i) => [k, i])).entries()]
      .filter(([k]) => !prompts.has(k))
      .map(([, i]) => i);
    if (todo.length === 0) return;
    // padding all of these rows share is cut (the longest prompt may be held already)
    const cut = Math.min(...todo.map((i) => pad[i]!));
    const s = tokens[0]!.length - cut;
    const own = todo.map((i) => {
      const row: PagedRow = { blocks: [], length: 0 };
      reserve(row, s - (pad[i]! - cut));
      return row;
    });
    const pick = (xs: number[][]) => todo.flatMap((i) => xs[i]!.slice(cut));
    const logits = forward(
      pick(tokens),
      pick(positions),
      own,
      s,
      todo.map((i) => pad[i]! - cut),
    );
    const v = c.vocabSize;
    own.forEach((row, u) => {
      row.length = s - (pad[todo[u]!]! - cut);
      prompts.set(keys[todo[u]!]!, { row, logits: logits.slice(u * v, (u + 1) * v) });
    });
  };

  return {
    pool,
    async prefill(tokens, positions, pad) {
      const keys = tokens.map((t, i) => `${positions[i]![pad[i]!]}:${t.slice(pad[i]).join(',')}`);
      prefillNew(tokens, positions, pad, keys);
      const v = c.vocabSize;
      if (sharedLogits.length < keys.length * v) sharedLogits = new Float32Array(keys.length * v);
      const rows = keys.map((k, i) => {
        const entry = prompts.get(k)!;
        sharedLogits.set(entry.logits, i * v);
        return share(entry.row);
      });
      return { logits: sharedLogits.subarray(0, keys.length * v), kv: { rows } };
    },
    async step(kv, tokens, positions) {
      for (const row of kv.rows) reserve(row, 1);
      const logits = forward(
        tokens,
        positions,
        kv.rows,
        1,
        new Array<number>(kv.rows.length).fill(0),
      );
      for (const row of kv.rows) row.length += 1;
      return { logits, kv };
    },
    merge: (a, b) => (a ? { rows: [...a.rows, ...b.rows] } : b),
    select(kv, keep) {
      const rows = keep.map((r) => share(kv.rows[r]!));
      free(kv.rows);
      forget(rows.length === 0);
      return rows.length > 0 ? { rows } : undefined;
    },
    dispose(kv) {
      if (kv) free(kv.rows);
      forget(true);
    },
  };
}
