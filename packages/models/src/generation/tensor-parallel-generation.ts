import type { ProcessGroup } from '@rl2/parallel';
import { ModelsError } from '../errors.js';
import type { DecoderModel } from '../model/decoder-model.js';
import type { BatchStepper, SamplingRow } from './batch-stepper.js';
import type { KvBatch } from './cached-forward.js';
import { tfjsDecoder } from './kv-decoder.js';
import type { SampledToken } from './sample-token.js';
import {
  sampleVocabParallel,
  type VocabParallelRow,
  vocabParallelRow,
} from './vocab-parallel-sampling.js';

// Tensor-parallel generation (Megatron layout, Shoeybi et al. 2019, https://arxiv.org/abs/1909.08053):
// every rank of the tp group holds its shards (column-parallel q/k/v/gate/up, row-parallel
// o/down with one all-reduce per attention and per MLP block, the embedding and LM head split
// by vocabulary) and the KV cache of its own heads. Group rank 0 (the lead) runs the generator;
// before each forward it broadcasts what to run (the ops below), so the other ranks run the
// same forward on their shards and join its collectives. Sampling is vocab-parallel.

const PREFILL = 1;
const STEP = 2;
const SELECT = 3;
const RESET = 4;
const CLOSE = 5;
const HEARTBEAT = 6;

/**
 * The cache and forwards of one rank; the lead and the followers run the same calls. The tfjs
 * decoder (the fused one takes whole, dense layers): its KV cache holds this rank's kv heads,
 * its logits are this rank's vocabulary columns [B, V/tp].
 */
function rankState(model: DecoderModel, tp: ProcessGroup) {
  const decoder = tfjsDecoder(model);
  let kv: KvBatch | undefined;
  const v = model.config.vocabSize;
  return {
    async prefill(
      tokens: number[][],
      positions: number[][],
      pad: number[],
      rows: VocabParallelRow[],
      lead?: readonly SamplingRow[],
    ) {
      const out = await decoder.prefill(tokens, positions, pad);
      kv = decoder.merge(kv, out.kv);
      return sampleVocabParallel(out.logits, rows, tp, v, lead);
    },
    async step(
      tokens: number[],
      positions: number[],
      rows: VocabParallelRow[],
      lead?: readonly SamplingRow[],
    ) {
      const out = await decoder.step(kv as KvBatch, tokens, positions);
      kv = out.kv;
      return sampleVocabParallel(out.logits, rows, tp, v, lead);
    },
    select(keep: number[]) {
      if (kv) kv = decoder.select(kv, keep);
    },
    reset() {
      decoder.dispose(kv);
      kv = undefined;
    },
  };
}

/** [op, a, b] then, when a payload follows, its values; float32 holds token ids and positions exactly (< 2^24). */
function send(tp: ProcessGroup, op: number, a: number, b: number, payload?: number[]): void {
  tp.broadcast(Float32Array.from([op, a, b, payload?.length ?? 0]), 0);
  if (payload && payload.length > 0) tp.broadcast(Float32Array.from(payload), 0);
}

function rowsPayload(rows: readonly VocabParallelRow[]): number[] {
  return rows.flatMap((r) => [r.temperature, r.wholeRow ? 1 : 0]);
}

function readRows(data: Float32Array, at: number, n: number): VocabParallelRow[] {
  return Array.from({ length: n }, (_, i) => ({
    temperature: data[at + 2 * i] as number,
    wholeRow: data[at + 2 * i + 1] === 1,
  }));
}

/** The lead's stepper, plus what keeps the followers waiting and what releases them. */
export interface TensorParallelStepper extends BatchStepper {
  /** An empty op: followers waiting between forwards see the lead alive (their wait has the collective timeout). */
  heartbeat(): void;
  /** Releases the followers: their {@link followTensorParallel} returns. */
  close(): void;
  /** Why the group is out of step (an op failed after it was broadcast); undefined while it is not. */
  readonly broken: Error | undefined;
}

function outOfStep(cause: Error): ModelsError {
  return new ModelsError(
    'GROUP_OUT_OF_STEP',
    'the tensor-parallel group is out of step: an op failed on rank 0 after it was sent to the other ranks ' +
      `(${cause.message}); they wait inside its collectives until they time out or rank 0 exits. ` +
      'Restart every rank of the group.',
  );
}

/**
 * The lead's stepper (pass it as `createGenerator(model, { stepper })` on tp group rank 0, with
 * `model` this rank's tensor-parallel shards): every call is broadcast to the group first.
 * `close()` releases the followers (see {@link followTensorParallel}).
 *
 * An op that throws after its broadcast (a lost rank, an error of rank 0 inside the forward or
 * its sampling) leaves the followers inside its collectives, where no later broadcast may meet
 * them: the stepper is then `broken`, sends nothing more (reset and close only free this rank's
 * cache) and every later op throws GROUP_OUT_OF_STEP naming the first error, instead of
 * mismatching collectives. Errors before the broadcast (bad rows) leave the group usable.
 */
export function tensorParallelStepper(
  model: DecoderModel,
  tp: ProcessGroup,
): TensorParallelStepper {
  const state = rankState(model, tp);
  const v = model.config.vocabSize;
  const described = (rows: readonly SamplingRow[]) => rows.map((r) => vocabParallelRow(r, v));
  let broken: Error | undefined;
  const sent = <T>(run: () => T): T => {
    if (broken) throw outOfStep(broken);
    try {
      const out = run();
      if (out instanceof Promise)
        return out.catch((e: Error) => {
          broken ??= e;
          throw e;
        }) as T;
      return out;
    } catch (e) {
      broken ??= e as Error;
      throw e;
    }
  };
  return {
    get broken() {
      return broken;
    },
    async prefill(tokens, positions, pad, rows) {
      if (broken) throw outOfStep(broken);
      const vp = described(rows);
      const s = tokens[0]?.length ?? 0;
      const payload = [...tokens.flat(), ...positions.flat(), ...pad, ...rowsPayload(vp)];
      return sent(async () => {
        send(tp, PREFILL, tokens.length, s, payload);
        return (await state.prefill(tokens, positions, pad, vp, rows)) as SampledToken[];
      });
    },
    async step(tokens, positions, rows) {
      if (broken) throw outOfStep(broken);
      const vp = described(rows);
      const payload = [...tokens, ...positions, ...rowsPayload(vp)];
      return sent(async () => {
        send(tp, STEP, tokens.length, 0, payload);
        return (await state.step(tokens, positions, vp, rows)) as SampledToken[];
      });
    },
    select(keep) {
      sent(() => {
        send(tp, SELECT, keep.length, 0, keep);
        state.select(keep);
      });
    },
    reset() {
      // called after an error: it must not throw (a failed send marks the stepper broken)
      try {
        if (!broken) sent(() => send(tp, RESET, 0, 0));
      } catch {}
      state.reset();
    },
    heartbeat() {
      sent(() => send(tp, HEARTBEAT, 0, 0));
    },
    close() {
      if (!broken) sent(() => send(tp, CLOSE, 0, 0));
      state.reset();
    },
  };
}

/**
 * A follower of the tp group (group ranks 1..tp-1): runs the forwards and sampling collectives
 * the lead's {@link tensorParallelStepper} broadcasts, on `model` (this rank's shards), until
 * the lead closes. Blocks this process's event loop between ops (the collectives wait), so
 * the lead must send its next op (a heartbeat while idle) or close within the collective
 * timeout of its last op.
 */
export async function followTensorParallel(model: DecoderModel, tp: ProcessGroup): Promise<void> {
  const state = rankState(model, tp);
  for (;;) {
    const [op, a, b, n] = tp.broadcast(new Float32Array(4), 0) as unknown as [
      number,
      number,
      number,
      number,
    ];
    const data = n > 0 ? tp.broadcast(new Float32Array(n), 0) : new Float32Array(0);
    const ints = (from: number, count: number) => Array.from(data.subarray(from, from + count));
    if (op === PREFILL) {
      const rows = a;
      const len = b;
      const flat = ints(0, rows * len);
      const pos = ints(rows * len, rows * len);
      const tokens = Array.from({ length: rows }, (_, r) => flat.slice(r * len, (r + 1) * len));
      const positions = Array.from({ length: rows }, (_, r) => pos.slice(r * len, (r + 1) * len));
      await state.prefill(
        tokens,
        positions,
        ints(2 * rows * len, rows),
        readRows(data, 2 * rows * len + rows, rows),
      );
    } else if (op === STEP) {
      await state.step(ints(0, a), ints(a, a), readRows(data, 2 * a, a));
    } else if (op === SELECT) state.select(ints(0, a));
    else if (op === RESET) state.reset();
    else if (op === HEARTBEAT) continue;
    else {
      state.reset(); // CLOSE
      return;
    }
  }
}
