import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import * as tf from '@tensorflow/tfjs-core';
import { initEngine } from '@rl2/engine';
import { beforeAll, describe, expect, it } from 'vitest';
import { parseSafetensors } from '../checkpoint/safetensors-reader.js';
import { denseLinear } from '../layers/linear.js';
import { type LoraDropout, loraLinear } from './lora-linear.js';
import { loraScale } from './lora-spec.js';

const FIX = join(import.meta.dirname, '..', '..', 'fixtures', 'lora');
const meta = JSON.parse(readFileSync(join(FIX, 'reference.json'), 'utf8')) as Record<
  string,
  { rank: number; alpha: number; use_rslora: boolean; scale: number }
>;

function maxAbsDiff(a: ArrayLike<number>, b: ArrayLike<number>): number {
  expect(a.length).toBe(b.length);
  let m = 0;
  for (let i = 0; i < a.length; i++) m = Math.max(m, Math.abs(a[i]! - b[i]!));
  return m;
}

beforeAll(async () => {
  await initEngine({ backend: 'cpu', logger: () => {} });
});

describe.each(['linear', 'linear-rslora'])('a LoRA linear against PyTorch (%s)', (name) => {
  const ref = parseSafetensors(new Uint8Array(readFileSync(join(FIX, `${name}.safetensors`))));
  const t = (k: string) => tf.tensor(ref.get(k)!.data, ref.get(k)!.shape);
  const m = meta[name]!;

  it('has the scale PEFT uses: alpha / r, or alpha / sqrt(r) with rsLoRA', () => {
    expect(loraScale({ rank: m.rank, alpha: m.alpha, useRslora: m.use_rslora })).toBe(m.scale);
  });

  it('output and the gradients of x, lora_A and lora_B within 1e-5', () => {
    const params = new Map([
      ['p.weight', t('weight')],
      ['p.bias', t('bias')],
      ['p.lora_A.weight', t('lora_A')],
      ['p.lora_B.weight', t('lora_B')],
    ]);
    const lin = loraLinear(denseLinear, m.scale)('p', params);
    const x = t('x') as tf.Tensor2D;
    const g = t('g');
    const y = lin.forward(x);
    expect(maxAbsDiff(y.dataSync(), ref.get('y')!.data)).toBeLessThanOrEqual(1e-5);
    const f = (xx: tf.Tensor, a: tf.Tensor, b: tf.Tensor) => {
      const local = new Map([...params, ['p.lora_A.weight', a], ['p.lora_B.weight', b]]);
      return tf.sum(
        tf.mul(loraLinear(denseLinear, m.scale)('p', local).forward(xx as tf.Tensor2D), g),
      );
    };
    const [dx, dA, dB] = tf.grads(f)([
      x,
      params.get('p.lora_A.weight')!,
      params.get('p.lora_B.weight')!,
    ]);
    expect(maxAbsDiff(dx!.dataSync(), ref.get('grad.x')!.data)).toBeLessThanOrEqual(1e-5);
    expect(maxAbsDiff(dA!.dataSync(), ref.get('grad.lora_A')!.data)).toBeLessThanOrEqual(1e-5);
    expect(maxAbsDiff(dB!.dataSync(), ref.get('grad.lora_B')!.data)).toBeLessThanOrEqual(1e-5);
    tf.dispose([...params.values(), x, g, y, dx!, dA!, dB!]);
  });

  it('leaves a module without adapters as its base linear', () => {
    const params = new Map([['p.weight', t('weight')]]);
    const x = t('x') as tf.Tensor2D;
    const a = loraLinear(denseLinear, m.scale)('p', params).forward(x);
    const b = denseLinear('p', params).forward(x);
    expect(maxAbsDiff(a.dataSync(), b.dataSync())).toBe(0);
    tf.dispose([...params.values(), x, a, b]);
  });
});

describe('LoRA dropout', () => {
  const params = new Map([
    ['p.weight', tf.zeros([3, 8])],
    ['p.lora_A.weight', tf.ones([2, 8])],
    ['p.lora_B.weight', tf.ones([3, 2])],
  ]);
  const x = tf.ones([4, 8]) as tf.Tensor2D;
  const underTape = (dropout: LoraDropout) => {
    let out: Float32Array = new Float32Array();
    const grads = tf.grads((a: tf.Tensor) => {
      const y = loraLinear(
        denseLinear,
        1,
        dropout,
      )('p', new Map([...params, ['p.lora_A.weight', a]]));
      const v = y.forward(x);
      out = v.dataSync() as Float32Array;
      return tf.sum(v);
    })([params.get('p.lora_A.weight')!]);
    tf.dispose(grads);
    return out;
  };

  it('drops inputs only while a gradient is taken, with masks fixed by the key', () => {
    const dropout: LoraDropout = { rate: 0.5, key: 7 };
    const eval_ = loraLinear(denseLinear, 1, dropout)('p', params).forward(x);
    expect([...eval_.dataSync()].every((v) => v === 16)).toBe(true); // no dropout without a tape
    const a = underTape(dropout);
    expect([...a].some((v) => v !== 16)).toBe(true);
    expect(underTape(dropout)).toEqual(a); // the same key: the same masks (recompute, resume)
    expect(underTape({ rate: 0.5, key: 8 })).not.toEqual(a);
    expect([...underTape({ rate: 0.5 })].every((v) => v === 16)).toBe(true); // no key: off
    eval_.dispose();
  });
});
