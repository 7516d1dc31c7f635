import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import * as tf from '@tensorflow/tfjs-core';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { initEngine } from '@rl2/engine';
import { nativeForTests } from '@rl2/engine/testing';
import { parseSafetensors } from '../src/checkpoint/safetensors-reader.js';
import { loadModel } from '../src/checkpoint/load-checkpoint.js';
import { tokenLogits, tokenLogprobs } from '../src/heads/token-logprobs.js';
import { tokenValues } from '../src/heads/token-values.js';
import { createDecoderModel, type DecoderModel } from '../src/model/decoder-model.js';
import { groupedQueryAttention } from '../src/layers/attention.js';
import type { TokenBatch } from '../src/model/token-batch.js';

const FIX = join(import.meta.dirname, '..', 'fixtures');

interface Reference {
  input_ids: number[];
  position_ids: number[];
  segment_ids: number[];
  targets: number[];
  loss_weights: number[];
  temperature: number;
  loss: number;
  alone: { a: number[]; b: number[] };
}

function readRef(name: string) {
  const meta = JSON.parse(readFileSync(join(FIX, name, 'reference.json'), 'utf8')) as Reference;
  const tensors = parseSafetensors(
    new Uint8Array(readFileSync(join(FIX, name, 'reference.safetensors'))),
  );
  return { meta, tensors };
}

function maxAbsDiff(a: ArrayLike<number>, b: ArrayLike<number>): number {
  expect(a.length).toBe(b.length);
  let m = 0;
  for (let i = 0; i < a.length; i++) m = Math.max(m, Math.abs(a[i]! - b[i]!));
  return m;
}

function maxAbs(a: ArrayLike<number>): number {
  let m = 0;
  for (let i = 0; i < a.length; i++) m = Math.max(m, Math.abs(a[i]!));
  return m;
}

/** Relative gradient error per tensor: max |g - g_ref| / max |g_ref|. */
function checkGrads(
  model: DecoderModel,
  grads: Record<string, tf.Tensor>,
  ref: Map<string, { data: Float32Array }>,
) {
  expect(Object.keys(grads).length).toBe(model.params.size);
  let worst = 0;
  for (const [name, v] of model.params) {
    const g = grads[v.name]!;
    const r = ref.get(`grad.${name}`)!.data;
    const rel = maxAbsDiff(g.dataSync(), r) / Math.max(maxAbs(r), 1e-12);
    worst = Math.max(worst, rel);
    expect(rel, name).toBeLessThanOrEqual(1e-4);
  }
  return worst;
}

beforeAll(async () => {
  await initEngine({ backend: nativeForTests().ok ? 'native' : 'cpu', logger: () => {} });
  await tf.setBackend('cpu');
});

// stock cpu (composite ops) and, where the addon is built, native (fused RMSNorm, SwiGLU,
// rotary, attention and cross-entropy kernels) against the same PyTorch reference
const BACKENDS = ['cpu', ...(nativeForTests().ok ? ['native'] : [])];
const FAMILIES = BACKENDS.flatMap((backend) =>
  ['llama', 'qwen2', 'qwen3'].map((family) => [family, backend] as const),
);

describe.each(FAMILIES)('%s parity with the PyTorch reference on %s', (family, backend) => {
  const { meta, tensors } = readRef(family);
  beforeAll(async () => {
    await tf.setBackend(backend);
  });
  afterAll(async () => {
    await tf.setBackend('cpu');
  });
  const batch: TokenBatch = {
    inputIds: meta.input_ids,
    positionIds: meta.position_ids,
    segmentIds: meta.segment_ids,
  };

  it('logits, logprobs and entropy match within 1e-4 (packed row)', async () => {
    const { model } = await loadModel(join(FIX, family));
    const logits = tokenLogits(model, batch);
    expect(maxAbsDiff(logits.dataSync(), tensors.get('logits')!.data)).toBeLessThanOrEqual(1e-4);
    // vocab chunk 48 does not divide 128: exercises the streamed logsumexp and a ragged last chunk
    const { logprobs, entropy } = tokenLogprobs(model, batch, meta.targets, {
      temperature: meta.temperature,
      vocabChunk: 48,
    });
    expect(maxAbsDiff(logprobs.dataSync(), tensors.get('logprobs')!.data)).toBeLessThanOrEqual(
      1e-4,
    );
    expect(maxAbsDiff(entropy.dataSync(), tensors.get('entropy')!.data)).toBeLessThanOrEqual(1e-4);
    tf.dispose([logits, logprobs, entropy]);
  });

  it('packing [a, b] gives the logprobs of a and b run alone', async () => {
    const { model } = await loadModel(join(FIX, family));
    const { logprobs, entropy } = tokenLogprobs(model, batch, meta.targets, {
      temperature: meta.temperature,
    });
    const lp = logprobs.dataSync();
    const alone = [...meta.alone.a, ...meta.alone.b];
    expect(maxAbsDiff(lp, alone)).toBeLessThanOrEqual(1e-4);
    // and through this implementation alone, not only through the reference
    const a = meta.alone.a.length;
    const single = tokenLogprobs(
      model,
      { inputIds: meta.input_ids.slice(a), positionIds: meta.position_ids.slice(a) },
      meta.targets.slice(a),
      { temperature: meta.temperature },
    );
    expect(maxAbsDiff(lp.slice(a), single.logprobs.dataSync())).toBeLessThanOrEqual(1e-5);
    tf.dispose([logprobs, entropy, single.logprobs, single.entropy]);
  });

  it.each([
    [false, 48],
    [true, 8192],
  ])(
    'gradients of the loss match within 1e-4 relative (recompute=%s, vocab chunk %i)',
    async (recompute, vocabChunk) => {
      const { model } = await loadModel(join(FIX, family));
      const w = tf.tensor1d(meta.loss_weights);
      const before = tf.memory().numTensors;
      const { value, grads } = tf.variableGrads(() => {
        const { logprobs, entropy } = tokenLogprobs(model, batch, meta.targets, {
          temperature: meta.temperature,
          vocabChunk,
          recompute,
        });
        // loss = -sum(w * logp) / sum(w) - 0.01 * mean(entropy)
        return tf.sub(
          tf.neg(tf.div(tf.sum(tf.mul(w, logprobs)), tf.sum(w))),
          tf.mul(0.01, tf.mean(entropy)),
        ) as tf.Scalar;
      }, [...model.params.values()]);
      expect(Math.abs(value.dataSync()[0]! - meta.loss)).toBeLessThanOrEqual(1e-5);
      checkGrads(model, grads, tensors);
      tf.dispose([value, ...Object.values(grads)]);
      expect(tf.memory().numTensors).toBe(before);
      w.dispose();
    },
  );
});

describe('fused logprob head without entropy gradient', () => {
  it.each([48, 8192])(
    'matches autograd through full logits (vocab chunk %i)',
    async (vocabChunk) => {
      const { meta } = readRef('qwen2');
      const { model } = await loadModel(join(FIX, 'qwen2'));
      const batch: TokenBatch = {
        inputIds: meta.input_ids,
        positionIds: meta.position_ids,
        segmentIds: meta.segment_ids,
      };
      const params = [...model.params.values()];
      const w = tf.tensor1d(meta.loss_weights);
      const fused = tf.variableGrads(() => {
        const { logprobs } = tokenLogprobs(model, batch, meta.targets, {
          temperature: 0.5,
          vocabChunk,
        });
        return tf.neg(tf.sum(tf.mul(w, logprobs))) as tf.Scalar;
      }, params);
      const plain = tf.variableGrads(() => {
        const logp = tf.logSoftmax(tf.div(tokenLogits(model, batch), 0.5));
        const picked = tf.sum(tf.mul(logp, tf.oneHot(tf.tensor1d(meta.targets, 'int32'), 128)), 1);
        return tf.neg(tf.sum(tf.mul(w, picked))) as tf.Scalar;
      }, params);
      expect(Math.abs(fused.value.dataSync()[0]! - plain.value.dataSync()[0]!)).toBeLessThan(1e-4);
      for (const v of params) {
        const a = fused.grads[v.name]!.dataSync();
        const b = plain.grads[v.name]!.dataSync();
        expect(maxAbsDiff(a, b) / Math.max(maxAbs(b), 1e-12)).toBeLessThanOrEqual(1e-4);
      }
      tf.dispose([
        w,
        fused.value,
        plain.value,
        ...Object.values(fused.grads),
        ...Object.values(plain.grads),
      ]);
    },
  );
});

describe('value head (Qwen2ForTokenClassification)', () => {
  const { meta, tensors } = readRef('qwen2-critic');
  const batch: TokenBatch = {
    inputIds: meta.input_ids,
    positionIds: meta.position_ids,
    segmentIds: meta.segment_ids,
  };

  it('values and gradients match the reference', async () => {
    const { model } = await loadModel(join(FIX, 'qwen2-critic'));
    expect(model.config.head).toBe('value');
    const values = tokenValues(model, batch);
    expect(maxAbsDiff(values.dataSync(), tensors.get('values')!.data)).toBeLessThanOrEqual(1e-4);
    expect(maxAbsDiff(values.dataSync(), [...meta.alone.a, ...meta.alone.b])).toBeLessThanOrEqual(
      1e-4,
    );
    values.dispose();
    const n = meta.input_ids.length;
    const returns = tf.linspace(-1, 1, n);
    const w = tf.tensor1d(meta.loss_weights);
    const { value, grads } = tf.variableGrads(
      () => tf.sum(tf.mul(w, tf.square(tf.sub(tokenValues(model, batch), returns)))) as tf.Scalar,
      [...model.params.values()],
    );
    expect(Math.abs(value.dataSync()[0]! - meta.loss) / Math.abs(meta.loss)).toBeLessThanOrEqual(
      1e-5,
    );
    checkGrads(model, grads, tensors);
    tf.dispose([value, returns, w, ...Object.values(grads)]);
  });
});

describe('replaceable attention kernel', () => {
  it('a custom kernel sees the whole packed row with its block-diagonal mask and gives the same logprobs', async () => {
    const { meta, tensors } = readRef('llama');
    const { model } = await loadModel(join(FIX, 'llama'));
    const calls: number[][] = [];
    const custom = createDecoderModel(model.config, model.params, {
      attention: (q, k, v, mask) => {
        calls.push([...q.shape, ...mask.shape]);
        return groupedQueryAttention(q, k, v, mask);
      },
    });
    const batch: TokenBatch = {
      inputIds: meta.input_ids,
      positionIds: meta.position_ids,
      segmentIds: meta.segment_ids,
    };
    const { logprobs, entropy } = tokenLogprobs(custom, batch, meta.targets, {
      temperature: meta.temperature,
    });
    const n = meta.input_ids.length;
    expect(calls).toEqual(new Array(2).fill([1, n, 4, 8, 1, n, n]));
    expect(maxAbsDiff(logprobs.dataSync(), tensors.get('logprobs')!.data)).toBeLessThanOrEqual(
      1e-4,
    );
    tf.dispose([logprobs, entropy]);
  });
});
