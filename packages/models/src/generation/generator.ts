import type { WeightDtype } from '@rl2/engine';
import { SeededRng } from '@rl2/data';
import { ModelsError } from '../errors.js';
import type { DecoderModel } from '../model/decoder-model.js';
import type { FinishReason, GenerationRequest, GenerationResult } from './generation-request.js';
import type { BatchStepper, SamplingRow } from './batch-stepper.js';
import { backendStepper } from './choose-stepper.js';
import type { KvCacheLayout } from './kv-decoder.js';
import type { SampledToken, TokenLogprob } from './sample-token.js';
import { deriveSeed } from './derive-seed.js';

/** Options of `createGenerator`. */
export interface GeneratorOptions {
  /** Most rows decoded together (default 16). Further requests wait in a queue. */
  maxBatch?: number;
  /** Default max_new_tokens (128). */
  maxNewTokens?: number;
  /** Stop tokens applied to every request unless it sets ignoreEos (default: config eos ids). */
  eosTokenIds?: readonly number[];
  /** Detokenizer for stop strings and `text`. */
  decode?: (ids: readonly number[]) => string;
  /** Base seed of the per-request sampling streams (default 0). */
  seed?: number;
  /**
   * Decode with one native call per layer when the backend and model allow it (default true);
   * false keeps the tfjs ops path (for comparisons).
   */
  fusedDecode?: boolean;
  /**
   * Element type of the weight matrices the fused decoder streams (default float32; see
   * `defaultWeightDtype` for a checkpoint's): bfloat16 / float16 read half the bytes per step.
   */
  weightDtype?: WeightDtype;
  /**
   * The fused decoder's KV cache layout (default paged: blocks from a pool, memory follows the
   * tokens held, a prompt's blocks shared by the rows of one prefill that repeat it; contiguous:
   * the left-padded `AppendKv`).
   */
  kvCache?: KvCacheLayout;
  /** Runs the batch on the model (default: this process, `backendStepper`); tensor parallelism passes its own. */
  stepper?: BatchStepper;
}

/** Counters of a generator, for logging. */
export interface GeneratorStats {
  running: number;
  queued: number;
  steps: number;
  generatedTokens: number;
}

/** A continuous-batching generator: `generate` calls may overlap; each resolves on its own. */
export interface Generator {
  generate(request: GenerationRequest): Promise<GenerationResult>;
  /** Finishes every queued and running request with reason `abort`. */
  abortAll(): void;
  stats(): GeneratorStats;
  /** Resolves when nothing is queued or running. */
  idle(): Promise<void>;
}

interface Row {
  request: GenerationRequest;
  rng: SeededRng;
  maxNew: number;
  tokens: number[];
  logprobs: number[];
  top: TokenLogprob[][];
  resolve: (r: GenerationResult) => void;
  reject: (e: unknown) => void;
  finish?: FinishReason;
  text?: string;
  aborted?: boolean;
}

/**
 * Batched generation with a KV cache and continuous batching (Yu et al. 2022, Orca,
 * https://www.usenix.org/conference/osdi22/presentation/yu): between decode steps, queued
 * requests are prefilled together and join the batch; finished rows leave it. Rows are
 * left-padded in one cache; each step decodes one token for every running row.
 */
export function createGenerator(model: DecoderModel, options: GeneratorOptions = {}): Generator {
  if (model.config.head !== 'causal-lm') {
    throw new ModelsError(
      'INVALID_ARGUMENT',
      `createGenerator: ${model.config.architecture} has no language-model head`,
    );
  }
  const maxBatch = options.maxBatch ?? 16;
  const eos = options.eosTokenIds ?? model.config.eosTokenIds;
  const queue: Row[] = [];
  let rows: Row[] = [];
  const stepper =
    options.stepper ??
    backendStepper(model, options.fusedDecode ?? true, options.weightDtype, options.kvCache);
  let loop: Promise<void> | undefined;
  let counter = 0;
  let steps = 0;
  let generatedTokens = 0;

  const finishRow = (row: Row): boolean => {
    const r = row.request;
    const n = row.tokens.length;
    if (r.signal?.aborted || row.aborted) row.finish = { type: 'abort' };
    else if (n > 0) {
      const last = row.tokens[n - 1]!;
      if (r.stopTokenIds?.includes(last) || (!r.ignoreEos && eos.includes(last)))
        row.finish = { type: 'stop', matched: last };
      else if (r.stop?.length && options.decode) {
        const text = options.decode(row.tokens);
        const hit = r.stop.map((s) => ({ s, at: text.indexOf(s) })).filter((h) => h.at >= 0);
        if (hit.length > 0) {
          const first = hit.reduce((a, b) => (b.at < a.at ? b : a));
          row.finish = { type: 'stop', matched: first.s };
          row.text = r.noStopTrim ? text : text.slice(0, first.at);
        }
      }
      if (
        !row.finish &&
        (n >= row.maxNew || r.inputIds.length + n >= model.config.maxPositionEmbeddings)
      ) {
        row.finish = { type: 'length' };
      }
    }
    if (!row.finish) return false;
    row.resolve({
      outputIds: row.tokens,
      logprobs: row.logprobs,
      finishReason: row.finish,
      text: row.text ?? options.decode?.(row.tokens),
      promptTokens: r.inputIds.length,
      ...(r.topLogprobs ? { topLogprobs: row.top } : {}),
    });
    return true;
  };

  // aborted rows need no token (a stepper may still sample them)
  const samplingRows = (active: Row[]): SamplingRow[] =>
    active.map((row) => ({
      params: row.request,
      rng: row.rng,
      topLogprobs: row.request.topLogprobs ?? 0,
      skip: !!(row.request.signal?.aborted || row.aborted),
    }));

  const sampleInto = (active: Row[], picked: (SampledToken | undefined)[]) => {
    active.forEach((row, i) => {
      // (aborted during the forward, or an onToken callback aborted a later row meanwhile)
      if (!picked[i] || row.request.signal?.aborted || row.aborted) return;
      const { token, logprob, top } = picked[i]!;
      row.tokens.push(token);
      row.logprobs.push(logprob);
      if (top) row.top.push(top);
      generatedTokens += 1;
      try {
        row.request.onToken?.({ id: token, logprob, ...(top ? { top } : {}) });
      } catch (e) {
        row.aborted = true;
        row.reject(e);
      }
    });
  };

  /** Prefills queued requests (left-padded to a common length) and appends them to the batch. */
  const admit = async () => {
    const joining = queue.splice(0, maxBatch - rows.length);
    const open = joining.filter((row) => !finishRow(row));
    if (open.length === 0) return;
    const len = Math.max(...open.map((r) => r.request.inputIds.length));
    const pad = open.map((r) => len - r.request.inputIds.length);
    const tokens = open.map((r, i) => [
      ...new Array<number>(pad[i]!).fill(0),
      ...r.request.inputIds,
    ]);
    const positions = open.map((_, i) =>
      Array.from({ length: len }, (_, t) => Math.max(0, t - pad[i]!)),
    );
    const room = Math.max(
      ...open.map((r) =>
        Math.min(r.maxNew, model.config.maxPositionEmbeddings - r.request.inputIds.length),
      ),
    );
    // rows in no list yet: a failed prefill must reject them here (run's catch cannot see them)
    const picked = await stepper
      .prefill(tokens, positions, pad, samplingRows(open), room)
      .catch((e: unknown) => {
        for (const row of open) row.reject(e);
        throw e;
      });
    rows = [...rows, ...open];
    sampleInto(open, picked);
  };

  const decodeStep = async () => {
    const tokens = rows.map((r) => r.tokens.at(-1)!);
    const positions = rows.map((r) => r.request.inputIds.length + r.tokens.length - 1);
    const picked = await stepper.step(tokens, positions, samplingRows(rows));
    steps += 1;
    sampleInto(rows, picked);
  };

  const dropFinished = () => {
    for (let i = queue.length - 1; i >= 0; i--) {
      if (queue[i]!.request.signal?.aborted || queue[i]!.aborted) finishRow(queue.splice(i, 1)[0]!);
    }
    const keep: number[] = [];
    rows.forEach((row, i) => {
      if (!finishRow(row)) keep.push(i);
    });
    if (keep.length !== rows.length) {
      stepper.select(keep);
      rows = keep.map((i) => rows[i]!);
    }
  };

  const run = async () => {
    try {
      while (queue.length > 0 || rows.length > 0) {
        if (queue.length > 0 && rows.length < maxBatch) await admit();
        dropFinished();
        if (rows.length > 0) {
          await decodeStep();
          dropFinished();
        }
        // let callers enqueue requests or abort between steps
        await new Promise<void>((r) => setImmediate(r));
      }
    } catch (e) {
      for (const row of [...rows, ...queue.splice(0)]) row.reject(e);
      rows = [];
      stepper.reset();
    } finally {
      loop = undefined;
    }
  };

  return {
    generate(request) {
      if (request.inputIds.length === 0) {
        return Promise.reject(new ModelsError('INVALID_ARGUMENT', 'generate: inputIds is empty'));
      }
      const bad = request.inputIds.find(
        (t) => !Number.isInteger(t) || t < 0 || t >= model.config.vocabSize,
      );
      if (bad !== undefined) {
        return Promise.reject(
          new ModelsError(
            'INVALID_ARGUMENT',
            `generate: token id ${bad} is outside the vocabulary [0, ${model.config.vocabSize})`,
          ),
        );
      }
      const maxNew = request.maxNewTokens ?? options.maxNewTokens ?? 128;
      if (!Number.isInteger(maxNew) || maxNew < 1) {
        return Promise.reject(
          new ModelsError(
            'INVALID_ARGUMENT',
            `generate: maxNewTokens must be an integer >= 1, got ${maxNew}`,
          ),
        );
      }
      return new Promise<GenerationResult>((resolve, reject) => {
        const seed = request.seed ?? deriveSeed(options.seed ?? 0, counter);
        counter += 1;
        queue.push({
          request,
          rng: new SeededRng(seed),
          maxNew,
          tokens: [],
          logprobs: [],
          top: [],
          resolve,
          reject,
        });
        // started a microtask later, so requests sent together (a Promise.all) share one prefill
        loop ??= Promise.resolve().then(run);
      });
    },
    abortAll() {
      for (const row of [...rows, ...queue]) row.aborted = true;
    },
    stats: () => ({ running: rows.length, queued: queue.length, steps, generatedTokens }),
    idle: async () => {
      while (loop) await loop;
    },
  };
}
