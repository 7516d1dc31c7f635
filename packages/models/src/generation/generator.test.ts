import { join } from 'node:path';
import * as tf from '@tensorflow/tfjs-core';
import { beforeAll, describe, expect, it } from 'vitest';
import { initEngine } from '@rl2/engine';
import { loadModel } from '../checkpoint/load-checkpoint.js';
import { tokenLogits, tokenLogprobs } from '../heads/token-logprobs.js';
import type { DecoderModel } from '../model/decoder-model.js';
import { type BatchStepper, localStepper } from './batch-stepper.js';
import { createGenerator } from './generator.js';

const FIX = join(import.meta.dirname, '..', '..', 'fixtures');
let llama: DecoderModel;
let qwen3: DecoderModel;

beforeAll(async () => {
  await initEngine({ backend: 'cpu', logger: () => {} });
  llama = (await loadModel(join(FIX, 'llama'))).model;
  qwen3 = (await loadModel(join(FIX, 'qwen3'))).model;
});

/** Greedy decoding without a cache: a full forward over the whole sequence per new token. */
function naiveGreedy(model: DecoderModel, prompt: number[], n: number) {
  const seq = [...prompt];
  const logprobs: number[] = [];
  for (let i = 0; i < n; i++) {
    const logits = tokenLogits(model, { inputIds: seq, positionIds: seq.map((_, t) => t) });
    const last = tf.tidy(() =>
      tf.logSoftmax(tf.slice(logits, [seq.length - 1, 0], [1, -1])).dataSync(),
    );
    logits.dispose();
    let best = 0;
    for (let j = 1; j < last.length; j++) if (last[j]! > last[best]!) best = j;
    seq.push(best);
    logprobs.push(last[best]!);
  }
  return { outputIds: seq.slice(prompt.length), logprobs };
}

const PROMPTS = [
  [1, 17, 99, 5, 64],
  [1, 8],
  [1, 120, 33, 2, 91, 60, 7, 7, 100],
];

describe('createGenerator', () => {
  it.each(['llama', 'qwen3'])(
    '%s: batched greedy with KV cache equals uncached greedy decoding',
    async (name) => {
      const model = name === 'llama' ? llama : qwen3;
      const before = tf.memory().numTensors;
      const gen = createGenerator(model, { maxBatch: 8 });
      const results = await Promise.all(
        PROMPTS.map((p) =>
          gen.generate({ inputIds: p, temperature: 0, maxNewTokens: 6, ignoreEos: true }),
        ),
      );
      results.forEach((r, i) => {
        const ref = naiveGreedy(model, PROMPTS[i]!, 6);
        expect(r.outputIds).toEqual(ref.outputIds);
        r.logprobs.forEach((lp, j) => {
          expect(Math.abs(lp - ref.logprobs[j]!)).toBeLessThan(1e-4);
        });
        expect(r.finishReason).toEqual({ type: 'length' });
      });
      expect(tf.memory().numTensors).toBe(before);
    },
  );

  it('long generations fold the recent KV tail into the cache and still equal uncached decoding', async () => {
    const before = tf.memory().numTensors;
    const gen = createGenerator(llama, { maxBatch: 4 });
    const lens = [66, 20, 8]; // 66 steps fold the recent tail (32) twice
    const results = await Promise.all(
      PROMPTS.map((p, i) =>
        gen.generate({ inputIds: p, temperature: 0, maxNewTokens: lens[i]!, ignoreEos: true }),
      ),
    );
    results.forEach((r, i) => {
      expect(r.outputIds).toEqual(naiveGreedy(llama, PROMPTS[i]!, lens[i]!).outputIds);
    });
    expect(tf.memory().numTensors).toBe(before);
  });

  it('continuous batching: requests joining and leaving mid-run get the results they get alone', async () => {
    const gen = createGenerator(qwen3, { maxBatch: 2 });
    const lens = [3, 7, 5, 2];
    const first = PROMPTS.map((p, i) =>
      gen.generate({ inputIds: p, temperature: 0, maxNewTokens: lens[i]!, ignoreEos: true }),
    );
    await first[0];
    const late = gen.generate({
      inputIds: [1, 50, 51],
      temperature: 0,
      maxNewTokens: 4,
      ignoreEos: true,
    });
    const all = await Promise.all([...first, late]);
    const prompts = [...PROMPTS, [1, 50, 51]];
    const maxNew = [3, 7, 5, 4];
    all.forEach((r, i) => {
      expect(r.outputIds).toEqual(naiveGreedy(qwen3, prompts[i]!, maxNew[i]!).outputIds);
    });
    expect(gen.stats()).toMatchObject({ running: 0, queued: 0 });
  });

  it('seeded sampling is reproducible, independent of the batch, and reports logprobs at the temperature', async () => {
    const req = {
      inputIds: PROMPTS[0]!,
      temperature: 0.8,
      topP: 0.95,
      topK: 50,
      maxNewTokens: 8,
      ignoreEos: true,
      seed: 42,
    };
    const alone = await createGenerator(llama).generate(req);
    const gen = createGenerator(llama);
    const [batched] = await Promise.all([
      gen.generate(req),
      gen.generate({ ...req, inputIds: PROMPTS[2]!, seed: 7 }),
    ]);
    expect(batched!.outputIds).toEqual(alone.outputIds);
    const seq = [...req.inputIds, ...alone.outputIds];
    const n = seq.length - 1;
    const { logprobs, entropy } = tokenLogprobs(
      llama,
      { inputIds: seq.slice(0, n), positionIds: seq.slice(0, n).map((_, t) => t) },
      seq.slice(1),
      {
        temperature: 0.8,
      },
    );
    const ref = logprobs.dataSync().slice(req.inputIds.length - 1);
    alone.logprobs.forEach((lp, j) => {
      expect(Math.abs(lp - ref[j]!)).toBeLessThan(1e-4);
    });
    tf.dispose([logprobs, entropy]);
    const other = await createGenerator(llama).generate({ ...req, seed: 43 });
    expect(other.outputIds).not.toEqual(alone.outputIds);
  });

  it('stops on stop token ids, stop strings and aborts', async () => {
    const gen = createGenerator(qwen3, {
      decode: (ids) => ids.map((t) => String.fromCharCode(97 + (t % 26))).join(''),
    });
    const free = await gen.generate({
      inputIds: PROMPTS[1]!,
      temperature: 0,
      maxNewTokens: 6,
      ignoreEos: true,
    });
    const stopId = free.outputIds[2]!;
    const byId = await gen.generate({
      inputIds: PROMPTS[1]!,
      temperature: 0,
      maxNewTokens: 6,
      stopTokenIds: [stopId],
      ignoreEos: true,
    });
    expect(byId.finishReason).toEqual({ type: 'stop', matched: stopId });
    expect(byId.outputIds).toEqual(free.outputIds.slice(0, free.outputIds.indexOf(stopId) + 1));
    const stopStr = free.text!.slice(3, 5);
    const byStr = await gen.generate({
      inputIds: PROMPTS[1]!,
      temperature: 0,
      maxNewTokens: 6,
      stop: [stopStr],
      ignoreEos: true,
    });
    expect(byStr.finishReason).toEqual({ type: 'stop', matched: stopStr });
    expect(byStr.text).toBe(free.text!.slice(0, free.text!.indexOf(stopStr)));
    const ctrl = new AbortController();
    const pending = gen.generate({
      inputIds: PROMPTS[0]!,
      maxNewTokens: 100,
      ignoreEos: true,
      signal: ctrl.signal,
    });
    setImmediate(() => ctrl.abort());
    const aborted = await pending;
    expect(aborted.finishReason).toEqual({ type: 'abort' });
    expect(aborted.outputIds.length).toBeLessThan(100);
    await expect(gen.generate({ inputIds: [1, 999] })).rejects.toThrow(
      /token id 999 is outside the vocabulary \[0, 128\)/,
    );
  });

  it('streams each token to onToken and reports the top logprobs of the distribution it sampled from', async () => {
    const seen: { id: number; logprob: number; top?: { id: number; logprob: number }[] }[] = [];
    const req = {
      inputIds: PROMPTS[0]!,
      temperature: 0.7,
      maxNewTokens: 5,
      ignoreEos: true,
      seed: 5,
      topLogprobs: 3,
    };
    const out = await createGenerator(llama).generate({ ...req, onToken: (t) => seen.push(t) });
    expect(seen.map((t) => t.id)).toEqual(out.outputIds);
    expect(seen.map((t) => t.logprob)).toEqual(out.logprobs);
    expect(out.topLogprobs).toHaveLength(5);
    // reference: log_softmax(logits / 0.7) of the full sequence, sorted per position
    const seq = [...req.inputIds, ...out.outputIds];
    const logits = tokenLogits(llama, {
      inputIds: seq.slice(0, -1),
      positionIds: seq.slice(0, -1).map((_, t) => t),
    });
    const ref = tf.tidy(
      () =>
        tf
          .logSoftmax(tf.div(tf.slice(logits, [req.inputIds.length - 1, 0], [5, -1]), 0.7))
          .arraySync() as number[][],
    );
    logits.dispose();
    out.topLogprobs!.forEach((top, j) => {
      const want = ref[j]!.map((logprob, id) => ({ id, logprob }))
        .sort((a, b) => b.logprob - a.logprob)
        .slice(0, 3);
      expect(top.map((t) => t.id)).toEqual(want.map((t) => t.id));
      top.forEach((t, k) => {
        expect(Math.abs(t.logprob - want[k]!.logprob)).toBeLessThan(1e-4);
      });
      expect(seen[j]!.top).toEqual(top);
    });
    const failing = createGenerator(llama).generate({
      ...req,
      onToken: () => {
        throw new Error('client went away');
      },
    });
    await expect(failing).rejects.toThrow('client went away');
  });

  it('requests sent together share one prefill, told how many tokens they may still take', async () => {
    const inner = localStepper(qwen3);
    const calls: { rows: number; room?: number }[] = [];
    const stepper: BatchStepper = {
      ...inner,
      prefill(tokens, positions, pad, rows, room) {
        calls.push({ rows: tokens.length, room });
        return inner.prefill(tokens, positions, pad, rows, room);
      },
    };
    const gen = createGenerator(qwen3, { maxBatch: 8, stepper });
    await Promise.all(
      PROMPTS.map((p, i) =>
        gen.generate({ inputIds: p, temperature: 0, maxNewTokens: 3 + i, ignoreEos: true }),
      ),
    );
    expect(calls).toEqual([{ rows: 3, room: 5 }]);
  });

  it('abortAll finishes running and queued requests with reason abort', async () => {
    const gen = createGenerator(qwen3, { maxBatch: 1 });
    const pending = [0, 1, 2].map(() =>
      gen.generate({ inputIds: PROMPTS[0]!, maxNewTokens: 50, ignoreEos: true }),
    );
    setImmediate(() => gen.abortAll());
    const results = await Promise.all(pending);
    for (const r of results) expect(r.finishReason).toEqual({ type: 'abort' });
    expect(results[2]!.outputIds).toEqual([]); // never admitted
    await gen.idle();
    expect(gen.stats()).toMatchObject({ running: 0, queued: 0 });
  });

  it('a prefill that throws rejects the requests it was admitting (they hang otherwise), then serves again', async () => {
    const local = localStepper(llama);
    let fail = true;
    const stepper: BatchStepper = {
      ...local,
      prefill: (...a) => (fail ? Promise.reject(new Error('prefill broke')) : local.prefill(...a)),
    };
    const gen = createGenerator(llama, { stepper, maxBatch: 2 });
    const request = { inputIds: [1, 17, 99], maxNewTokens: 2, temperature: 0 };
    const failed = await Promise.allSettled([gen.generate(request), gen.generate(request)]);
    expect(failed.map((r) => r.status)).toEqual(['rejected', 'rejected']);
    await gen.idle();
    fail = false;
    expect((await gen.generate(request)).outputIds).toHaveLength(2);
  });
});
