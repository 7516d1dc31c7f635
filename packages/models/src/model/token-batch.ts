import { ModelsError } from '../errors.js';

/**
 * Tokens of one forward: `rows` rows of equal length T, row-major (length rows*T). A packed row
 * holds many sequences: `positionIds` restart at 0 per sequence and `segmentIds` tell them apart
 * (attention is causal inside a segment only). Trainers pass one packed row (`rows` = 1).
 */
export interface TokenBatch {
  inputIds: ArrayLike<number>;
  positionIds: ArrayLike<number>;
  /** Sequence index per token; defaults to one sequence per row. */
  segmentIds?: ArrayLike<number>;
  /** Number of rows (default 1). */
  rows?: number;
}

/** A packed row plus `cuSeqlens` (cumulative sequence lengths, [0, len0, len0+len1, ...]). */
export interface PackedRow extends Required<Omit<TokenBatch, 'rows'>> {
  inputIds: number[];
  positionIds: number[];
  segmentIds: number[];
  cuSeqlens: number[];
}

/** Concatenates sequences into one packed row with restarting position ids and segment ids. */
export function packSequences(sequences: readonly (readonly number[])[]): PackedRow {
  const row: PackedRow = { inputIds: [], positionIds: [], segmentIds: [], cuSeqlens: [0] };
  sequences.forEach((seq, s) => {
    seq.forEach((id, i) => {
      row.inputIds.push(id);
      row.positionIds.push(i);
      row.segmentIds.push(s);
    });
    row.cuSeqlens.push(row.inputIds.length);
  });
  return row;
}

/** Segment ids from cu_seqlens ([0, l0, l0+l1, ...]) for a row of `cuSeqlens.at(-1)` tokens. */
export function segmentIdsFromCuSeqlens(cuSeqlens: readonly number[]): number[] {
  const out: number[] = [];
  for (let s = 0; s + 1 < cuSeqlens.length; s++) {
    for (let i = cuSeqlens[s]!; i < cuSeqlens[s + 1]!; i++) out.push(s);
  }
  return out;
}

/** Checks lengths and returns rows, tokens per row and segment ids (one segment per row by default). */
export function resolveBatch(batch: TokenBatch): {
  rows: number;
  length: number;
  segmentIds: ArrayLike<number>;
} {
  const rows = batch.rows ?? 1;
  const n = batch.inputIds.length;
  if (n === 0 || n % rows !== 0) {
    throw new ModelsError(
      'SHAPE_MISMATCH',
      `TokenBatch: ${n} input ids do not split into rows=${rows} equal rows`,
    );
  }
  if (batch.positionIds.length !== n) {
    throw new ModelsError(
      'SHAPE_MISMATCH',
      `TokenBatch: positionIds has ${batch.positionIds.length} entries, inputIds ${n}`,
    );
  }
  if (batch.segmentIds && batch.segmentIds.length !== n) {
    throw new ModelsError(
      'SHAPE_MISMATCH',
      `TokenBatch: segmentIds has ${batch.segmentIds.length} entries, inputIds ${n}`,
    );
  }
  const length = n / rows;
  const segmentIds =
    batch.segmentIds ?? Array.from({ length: n }, (_, i) => Math.floor(i / length));
  return { rows, length, segmentIds };
}
