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
// same forward on their shards and join its collectives. Sampling is vocab-parallel. Several
// models may share the group (a base and its LoRA adapters, each with its own generator and KV
// cache): every op names its model's slot, and the lead runs one op at a time.

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

/**
 * [op, a, b, n, slot] then, when a payload follows, its n values; float32 holds token ids and
 * positions exactly (< 2^24).
 */
function send(
  tp: ProcessGroup,
  slot: number,
  op: number,
  a: number,
  b: number,
  payload?: number[],
): void {
  tp.broadcast(Float32Array.from([op, a, b, payload?.length ?? 0, slot]), 0);
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

/** What keeps the followers waiting, what releases them, and whether the group is in step. */
interface GroupControl {
  /** An empty op: followers waiting between forwards see the lead alive (their wait has the collective timeout). */
  heartbeat(): void;
  /** Releases the followers: their {@link followTensorParallel} returns. */
  close(): void;
  /** Why the group is out of step (an op failed after it was broadcast); undefined while it is not. */
  readonly broken: Error | undefined;
}

/** The lead's stepper, plus what keeps the followers waiting and what releases them. */
export interface TensorParallelStepper extends BatchStepper, GroupControl {}

/**
 * The lead of a tp group generating with several models (a base and its LoRA adapters, each
 * with its own generator): one stepper per model slot, ops run one at a time over the group.
 */
export interface TensorParallelLead extends GroupControl {
  /** The stepper of `model` (this rank's shards) in `slot`, the model the followers find there. */
  stepper(slot: number, model: DecoderModel): BatchStepper;
  /** Resolves once every op asked for has been sent and run (then `close()` sends at once). */
  idle(): Promise<void>;
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
 * One op at a time over the group: an op's broadcast, forward and collectives run only after
 * the previous op's (another model's generator may ask between the awaits of a forward). A
 * synchronous op (select, reset) changes the lead's cache at once and is sent at once when
 * nothing waits, else after what waits: each slot's ops reach the followers in order.
 */
function opQueue() {
  let broken: Error | undefined;
  let waiting = 0;
  let tail: Promise<unknown> = Promise.resolve();
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
  const enqueue = <T>(run: () => Promise<T>): Promise<T> => {
    waiting += 1;
    const out = tail
      .then(() => sent(run))
      .finally(() => {
        waiting -= 1;
      });
    tail = out.catch(() => {});
    return out;
  };
  return {
    get broken() {
      return broken;
    },
    get waiting() {
      return waiting;
    },
    /** An async op, after every op before it. */
    async run<T>(op: () => Promise<T>): Promise<T> {
      if (broken) throw outOfStep(broken);
      return enqueue(op);
    },
    /** A send without a result: now when nothing waits, else queued (its failure marks the group broken). */
    send(op: () => void): void {
      if (waiting === 0) sent(op);
      else void enqueue(async () => op()).catch(() => {});
    },
    idle: async () => {
      while (waiting > 0) await tail;
    },
  };
}

/**
 * The lead of a tp group (group rank 0) generating with one or more models: pass
 * `lead.stepper(slot, model)` as `createGenerator(model, { stepper })`, with `model` this
 * rank's tensor-parallel shards; the followers' {@link followTensorParallel} finds the model of
 * each slot. Every op is broadcast to the group first; `close()` releases the followers.
 *
 * An op that throws after its broadcast (a lost rank, an error of rank 0 inside the forward or
 * its sampling) leaves the followers inside its collectives, where no later broadcast may meet
 * them: the lead is then `broken`, sends nothing more (reset and close only free this rank's
 * caches) and every later op throws GROUP_OUT_OF_STEP naming the first error, instead of
 * mismatching collectives. Errors before the broadcast (bad rows) leave the group usable.
 */
export function tensorParallelLead(tp: ProcessGroup): TensorParallelLead {
  const queue = opQueue();
  const states = new Set<ReturnType<typeof rankState>>();
  return {
    get broken() {
      return queue.broken;
    },
    stepper(slot, model) {
      const state = rankState(model, tp);
      states.add(state);
      return slotStepper(slot, model, state, tp, queue);
    },
    heartbeat() {
      // an op waiting or running is as good
      if (queue.waiting === 0) queue.send(() => send(tp, 0, HEARTBEAT, 0, 0));
    },
    close() {
      if (!queue.broken) queue.send(() => send(tp, 0, CLOSE, 0, 0));
      for (const state of states) state.reset();
    },
    idle: () => queue.idle(),
  };
}

/** The stepper of one slot: its ops queued on the group, its cache `state`. */
function slotStepper(
  slot: number,
  model: DecoderModel,
  state: ReturnType<typeof rankState>,
  tp: ProcessGroup,
  queue: ReturnType<typeof opQueue>,
): BatchStepper {
  const v = model.config.vocabSize;
  const described = (rows: readonly SamplingRow[]) => rows.map((r) => vocabParallelRow(r, v));
  return {
    async prefill(tokens, positions, pad, rows) {
      if (queue.broken) throw outOfStep(queue.broken);
      const vp = described(rows);
      const s = tokens[0]?.length ?? 0;
      const payload = [...tokens.flat(), ...positions.flat(), ...pad, ...rowsPayload(vp)];
      return queue.run(async () => {
        send(tp, slot, PREFILL, tokens.length, s, payload);
        return (await state.prefill(tokens, positions, pad, vp, rows)) as SampledToken[];
      });
    },
    async step(tokens, positions, rows) {
      if (queue.broken) throw outOfStep(queue.broken);
      const vp = described(rows);
      const payload = [...tokens, ...positions, ...rowsPayload(vp)];
      return queue.run(async () => {
        send(tp, slot, STEP, tokens.length, 0, payload);
        return (await state.step(tokens, positions, vp, rows)) as SampledToken[];
      });
    },
    select(keep) {
      if (queue.broken) throw outOfStep(queue.broken);
      state.select(keep);
      queue.send(() => send(tp, slot, SELECT, keep.length, 0, keep));
    },
    reset() {
      // called after an error: it must not throw (a failed send marks the group broken)
      try {
        if (!queue.broken) queue.send(() => send(tp, slot, RESET, 0, 0));
      } catch {}
      state.reset();
    },
  };
}

/**
 * The lead's stepper of one model (pass it as `createGenerator(model, { stepper })` on tp group
 * rank 0, with `model` this rank's tensor-parallel shards): {@link tensorParallelLead} with one
 * slot. `close()` releases the followers (see {@link followTensorParallel}).
 */
export function tensorParallelStepper(
  model: DecoderModel,
  tp: ProcessGroup,
): TensorParallelStepper {
  const lead = tensorParallelLead(tp);
  return {
    ...lead.stepper(0, model),
    get broken() {
      return lead.broken;
    },
    heartbeat: () => lead.heartbeat(),
    close: () => lead.close(),
  };
}

/**
 * A follower of the tp group (group ranks 1..tp-1): runs the forwards and sampling collectives
 * the lead's {@link tensorParallelLead} broadcasts, on `models` (this rank's shards: one model,
 * or the model of each slot), until the lead closes. Blocks this process's event loop between
 * ops (the collectives wait), so the lead must send its next op (a heartbeat while idle) or
 * close within the collective timeout of its last op.
 */
export async function followTensorParallel(
  models: DecoderModel | ((slot: number) => DecoderModel),
  tp: ProcessGroup,
): Promise<void> {
  const states = new Map<number, ReturnType<typeof rankState>>();
  const stateOf = (slot: number) => {
    let state = states.get(slot);
    if (!state) {
      state = rankState(typeof models === 'function' ? models(slot) : models, tp);
      states.set(slot, state);
    }
    return state;
  };
  for (;;) {
    const [op, a, b, n, slot] = tp.broadcast(new Float32Array(5), 0) as unknown as number[];
    const data = n! > 0 ? tp.broadcast(new Float32Array(n!), 0) : new Float32Array(0);
    const ints = (from: number, count: number) => Array.from(data.subarray(from, from + count));
    if (op === HEARTBEAT) continue;
    if (op === CLOSE) {
      for (const state of states.values()) state.reset();
      return;
    }
    const state = stateOf(slot!);
    if (op === PREFILL) {
      const rows = a!;
      const len = b!;
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
    } else if (op === STEP) await state.step(ints(0, a!), ints(a!, a!), readRows(data, 2 * a!, a!));
    else if (op === SELECT) state.select(ints(0, a!));
    else state.reset(); // RESET
  }
}
