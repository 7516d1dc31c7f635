import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import * as tf from '@tensorflow/tfjs-core';
import { initEngine } from '@rl2/engine';
import { nativeForTests } from '@rl2/engine/testing';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { loadModel } from '../checkpoint/load-checkpoint.js';
import { parseSafetensors } from '../checkpoint/safetensors-reader.js';
import { tokenLogits, tokenLogprobs } from '../heads/token-logprobs.js';
import { createDecoderModel } from '../model/decoder-model.js';
import type { ParamMap } from '../model/param-map.js';
import type { TokenBatch } from '../model/token-batch.js';
import { attachLora, mergeLora } from './lora-model.js';
import { initLoraParams, variableOf } from './lora-params.js';
import {
  LORA_TARGET_MODULES,
  isLoraParam,
  type LoraSpec,
  type LoraTargetModule,
  savedModuleParams,
} from './lora-spec.js';

const FIX = join(import.meta.dirname, '..', '..', 'fixtures');
const lora = JSON.parse(readFileSync(join(FIX, 'lora', 'reference.json'), 'utf8')) as Record<
  string,
  {
    target_modules: LoraTargetModule[];
    rank: number;
    alpha: number;
    use_rslora: boolean;
    loss: number;
  }
>;
const read = (file: string) => parseSafetensors(new Uint8Array(readFileSync(join(FIX, file))));

function relDiff(a: ArrayLike<number>, b: ArrayLike<number>): number {
  expect(a.length).toBe(b.length);
  let m = 0;
  let s = 0;
  for (let i = 0; i < a.length; i++) {
    m = Math.max(m, Math.abs(a[i]! - b[i]!));
    s = Math.max(s, Math.abs(b[i]!));
  }
  return m / Math.max(s, 1e-12);
}

beforeAll(async () => {
  await initEngine({ backend: nativeForTests().ok ? 'native' : 'cpu', logger: () => {} });
  await tf.setBackend('cpu');
});

// stock cpu and, where the addon is built, native (fused kernels) against the same reference
const BACKENDS = ['cpu', ...(nativeForTests().ok ? ['native'] : [])];
const CASES = BACKENDS.flatMap((b) => ['qwen3', 'llama'].map((f) => [f, b] as const));

describe.each(CASES)('%s with LoRA adapters against PyTorch on %s', (family, backend) => {
  beforeAll(async () => {
    await tf.setBackend(backend);
  });
  afterAll(async () => {
    await tf.setBackend('cpu');
  });
  const m = lora[`${family}-model`]!;
  const ref = read(`lora/${family}-model.safetensors`);
  const meta = JSON.parse(readFileSync(join(FIX, family, 'reference.json'), 'utf8'));
  const batch: TokenBatch = {
    inputIds: meta.input_ids,
    positionIds: meta.position_ids,
    segmentIds: meta.segment_ids,
  };
  const spec: LoraSpec = {
    rank: m.rank,
    alpha: m.alpha,
    dropout: 0,
    targetModules: m.target_modules,
    useRslora: m.use_rslora,
  };
  const open = async () => {
    const { model } = await loadModel(join(FIX, family));
    const adapters: ParamMap = new Map();
    for (const [name, t] of read(`lora/${family}-model-adapter.safetensors`))
      adapters.set(name, variableOf(tf.tensor(t.data, t.shape)));
    return attachLora(model, adapters, spec);
  };

  it('logits and logprobs within 1e-5 of the reference (relative)', async () => {
    const { model } = await open();
    const logits = tokenLogits(model, batch);
    expect(relDiff(logits.dataSync(), ref.get('logits')!.data)).toBeLessThanOrEqual(1e-5);
    const { logprobs } = tokenLogprobs(model, batch, meta.targets, {
      temperature: meta.temperature,
    });
    expect(relDiff(logprobs.dataSync(), ref.get('logprobs')!.data)).toBeLessThanOrEqual(1e-5);
  });

  it.each([
    [false, 8192],
    [true, 8192],
    [false, 48],
  ])(
    'gradients of every lora_A and lora_B within 1e-5 relative, none for the base (recompute=%s, vocab chunk %i)',
    async (recompute, vocabChunk) => {
      const { model, adapters } = await open();
      const w = tf.tensor1d(meta.loss_weights);
      const trainable = [...model.params.values()].filter((v) => v.trainable);
      expect(trainable.length).toBe(adapters.size);
      const { value, grads } = tf.variableGrads(() => {
        const { logprobs, entropy } = tokenLogprobs(model, batch, meta.targets, {
          temperature: meta.temperature,
          recompute,
          vocabChunk,
        });
        return tf.sub(
          tf.neg(tf.div(tf.sum(tf.mul(w, logprobs)), tf.sum(w))),
          tf.mul(0.01, tf.mean(entropy)),
        ) as tf.Scalar;
      });
      // variableGrads without a list takes every trainable variable: only the adapters are
      expect(Object.keys(grads).sort()).toEqual([...adapters.values()].map((v) => v.name).sort());
      expect(Math.abs(value.dataSync()[0]! - m.loss)).toBeLessThanOrEqual(1e-5);
      for (const [name, v] of adapters) {
        const rel = relDiff(grads[v.name]!.dataSync(), ref.get(`grad.${name}`)!.data);
        expect(rel, name).toBeLessThanOrEqual(1e-5);
      }
      tf.dispose([w, value, ...Object.values(grads)]);
    },
  );

  it('the merged weights give the logits of base + adapter', async () => {
    const l = await open();
    const merged = mergeLora(l);
    const plain = createDecoderModel(l.base.config, merged.params);
    const a = tokenLogits(l.model, batch).dataSync();
    const b = tokenLogits(plain, batch).dataSync();
    expect(relDiff(b, a)).toBeLessThanOrEqual(1e-5);
    // and the base alone is the model without the adapters
    const base = tokenLogits(l.base, batch).dataSync();
    expect(relDiff(base, a)).toBeGreaterThan(1e-2);
    merged.dispose();
  });
});

describe('initLoraParams', () => {
  it('initialises as PEFT: A uniform in +-1/sqrt(in), B zeros, so the model starts as its base', async () => {
    const { model } = await loadModel(join(FIX, 'qwen3'));
    const spec: LoraSpec = {
      rank: 8,
      alpha: 16,
      dropout: 0,
      targetModules: LORA_TARGET_MODULES,
      useRslora: false,
    };
    const adapters = initLoraParams(model.config, spec, 3);
    expect(adapters.size).toBe(2 * 7 * model.config.numLayers);
    const a = adapters.get('model.layers.1.mlp.down_proj.lora_A.weight')!;
    expect(a.shape).toEqual([8, 64]); // [r, intermediate]
    const av = a.dataSync();
    const bound = 1 / Math.sqrt(64);
    expect(Math.max(...av.map(Math.abs))).toBeLessThanOrEqual(bound);
    expect(Math.max(...av.map(Math.abs))).toBeGreaterThan(0.9 * bound);
    expect(adapters.get('model.layers.1.mlp.down_proj.lora_B.weight')!.shape).toEqual([32, 8]);
    expect(
      initLoraParams(model.config, spec, 3)
        .get('model.layers.1.mlp.down_proj.lora_A.weight')!
        .dataSync(),
    ).toEqual(av);
    const meta = JSON.parse(readFileSync(join(FIX, 'qwen3', 'reference.json'), 'utf8'));
    const batch = {
      inputIds: meta.input_ids,
      positionIds: meta.position_ids,
      segmentIds: meta.segment_ids,
    };
    const before = tokenLogits(model, batch).dataSync();
    const { model: adapted } = attachLora(model, adapters, spec);
    expect(tokenLogits(adapted, batch).dataSync()).toEqual(before);
  });

  it('refuses adapters of the wrong shape, naming the tensor', async () => {
    const { model } = await loadModel(join(FIX, 'qwen3'));
    const spec: LoraSpec = {
      rank: 4,
      alpha: 8,
      dropout: 0,
      targetModules: ['q_proj'],
      useRslora: false,
    };
    const adapters = initLoraParams(model.config, { ...spec, rank: 2 }, 1);
    expect(() => attachLora(model, adapters, spec)).toThrow(
      /model\.layers\.0\.self_attn\.q_proj\.lora_A\.weight" has shape \[2,32\], rank 4/,
    );
  });
});

describe('modules_to_save (PEFT ModulesToSaveWrapper)', () => {
  const spec: LoraSpec = {
    rank: 4,
    alpha: 8,
    dropout: 0,
    targetModules: ['q_proj', 'v_proj'],
    useRslora: false,
    modulesToSave: ['embed_tokens', 'norm'],
  };
  const meta = JSON.parse(readFileSync(join(FIX, 'qwen3', 'reference.json'), 'utf8'));
  const batch: TokenBatch = { inputIds: meta.input_ids, positionIds: meta.position_ids };
  const loss = (m: Parameters<typeof tokenLogprobs>[0]) => () =>
    tf.neg(tf.mean(tokenLogprobs(m, batch, meta.targets).logprobs)) as tf.Scalar;

  it('match module names by suffix as PEFT does, and refuse a name that matches nothing', () => {
    const names = [
      'model.embed_tokens.weight',
      'model.layers.0.input_layernorm.weight',
      'model.layers.0.self_attn.q_norm.weight',
      'model.layers.0.self_attn.q_proj.weight',
      'model.layers.0.self_attn.q_proj.lora_A.weight',
      'model.norm.weight',
    ];
    expect(savedModuleParams(names, ['norm'])).toEqual([names[1], names[2], names[5]]);
    expect(savedModuleParams(names, ['model.norm', 'embed_tokens'])).toEqual([names[0], names[5]]);
    expect(() => savedModuleParams(names, ['lm_head'])).toThrow(
      /modules_to_save "lm_head" names no module/,
    );
  });

  it('train copies: gradients for the adapters and copies alone, as full training at B = 0; the base unchanged', async () => {
    const { model } = await loadModel(join(FIX, 'qwen3'));
    const saved = savedModuleParams(model.params.keys(), spec.modulesToSave!);
    expect(saved.length).toBe(1 + 1 + 4 * model.config.numLayers); // embed, model.norm, 4 norms a layer
    // reference: the plain model with those parameters trainable (full training's gradients)
    for (const [name, v] of model.params) v.trainable = saved.includes(name);
    const full = tf.variableGrads(loss(model));
    const want = new Map(saved.map((n) => [n, full.grads[model.params.get(n)!.name]!.dataSync()]));
    const l = attachLora(model, initLoraParams(model.config, spec, 2), spec);
    expect([...l.adapters.keys()].filter((n) => !isLoraParam(n))).toEqual(saved);
    const { value, grads } = tf.variableGrads(loss(l.model));
    const trained = [...l.adapters.values()].map((v) => v.name).sort();
    expect(Object.keys(grads).sort()).toEqual(trained); // nothing of the base
    expect(Math.abs(value.dataSync()[0]! - full.value.dataSync()[0]!)).toBeLessThanOrEqual(1e-6);
    for (const n of saved) {
      expect(l.model.params.get(n)).not.toBe(l.base.params.get(n));
      expect(
        relDiff(grads[l.adapters.get(n)!.name]!.dataSync(), want.get(n)!),
        n,
      ).toBeLessThanOrEqual(1e-5);
    }
    // a step on the copy moves the adapted model and its merge, not the base
    const before = tokenLogits(l.base, batch).dataSync();
    const norm = l.adapters.get('model.norm.weight') as tf.Variable;
    norm.assign(tf.mul(norm, 1.5));
    const adapted = tokenLogits(l.model, batch).dataSync();
    expect(tokenLogits(l.base, batch).dataSync()).toEqual(before);
    expect(relDiff(adapted, before)).toBeGreaterThan(1e-2);
    const merged = mergeLora(l);
    expect(
      relDiff(
        tokenLogits(createDecoderModel(l.base.config, merged.params), batch).dataSync(),
        adapted,
      ),
    ).toBeLessThanOrEqual(1e-5);
    merged.dispose();
    tf.dispose([value, full.value, ...Object.values(grads), ...Object.values(full.grads)]);
  });
});
