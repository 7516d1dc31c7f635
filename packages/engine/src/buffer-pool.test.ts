import type { MathBackendCPU } from '@tensorflow/tfjs-backend-cpu';
import * as tf from '@tensorflow/tfjs-core';
import { afterEach, beforeAll, describe, expect, it } from 'vitest';
import {
  bufferPoolStats,
  DEFAULT_POOL_LIMIT_BYTES,
  resetBufferPool,
  setBufferPoolLimit,
  trimBufferPool,
} from './buffer-pool.js';
import { initEngine } from './init-engine.js';
import { nativeForTests } from './testing/native-for-tests.js';

const load = nativeForTests();
const N = 4096; // 16 KiB outputs: pooled

const backend = () => tf.backend() as unknown as MathBackendCPU;
const bufferOf = (t: tf.Tensor) => (backend().data.get(t.dataId)!.values as Float32Array).buffer;
const ramp = (offset: number) =>
  tf.tensor1d(Float32Array.from({ length: N }, (_, i) => i + offset));

describe.skipIf(!load.ok)('buffer pool of the native backend', () => {
  beforeAll(async () => {
    await initEngine({ backend: 'native', threads: 1, logger: () => {}, env: {} });
  });
  afterEach(() => resetBufferPool(DEFAULT_POOL_LIMIT_BYTES));

  it('gives a disposed output buffer to the next output of its size: one allocation, not five', () => {
    const [a, b] = [ramp(0), ramp(1)];
    for (const limit of [DEFAULT_POOL_LIMIT_BYTES, 0]) {
      resetBufferPool(limit);
      for (let i = 0; i < 5; i++) tf.add(a, b).dispose();
      expect(bufferPoolStats().allocated).toBe(limit ? 1 : 5);
      expect(bufferPoolStats().reused).toBe(limit ? 4 : 0);
    }
    tf.dispose([a, b]);
  });

  it('computes the same values with and without the pool', () => {
    const run = () =>
      tf.tidy(() => {
        let x: tf.Tensor = ramp(0);
        const w = tf.randomNormal([64, 64], 0, 0.1, 'float32', 7);
        for (let i = 0; i < 6; i++)
          x = tf.tanh(tf.matMul(x.reshape([64, 64]), w).add(x.reshape([64, 64])));
        return Array.from(x.dataSync());
      });
    resetBufferPool(0);
    const plain = run();
    resetBufferPool(DEFAULT_POOL_LIMIT_BYTES);
    run();
    expect(run()).toEqual(plain);
    expect(bufferPoolStats().reused).toBeGreaterThan(0);
  });

  it('never reuses a buffer whose values were read back (dataSync, data)', async () => {
    const [a, b] = [ramp(0), ramp(1)];
    const y = tf.add(a, b);
    const z = tf.add(a, b);
    const seen = [y.dataSync(), await z.data()] as Float32Array[];
    const copies = seen.map((v) => Float32Array.from(v));
    tf.dispose([y, z]);
    const next = [tf.add(a, a), tf.add(b, b), tf.add(a, b)];
    for (const t of next) for (const v of seen) expect(bufferOf(t)).not.toBe(v.buffer);
    expect(seen).toEqual(copies);
    tf.dispose([a, b, ...next]);
  });

  it('keeps a buffer out of the pool while a view of it is still tensor data', () => {
    const [a, b] = [ramp(0), ramp(1)];
    const y = tf.add(a, b);
    const values = backend().data.get(y.dataId)!.values as Float32Array;
    const info = backend().makeTensorInfo([N / 2], 'float32', values.subarray(N / 2));
    const half = tf.engine().makeTensorFromTensorInfo(info);
    y.dispose();
    const next = tf.mul(a, b);
    expect(bufferOf(next)).not.toBe(values.buffer);
    half.dispose();
    const after = tf.sub(a, b);
    expect(bufferOf(after)).toBe(values.buffer); // the last holder gone: reused
    tf.dispose([a, b, next, after]);
  });

  it('holds at most its limit of free bytes; the rest is left to the collector', () => {
    resetBufferPool(3 * N * 4);
    const a = ramp(0);
    const outs = Array.from({ length: 8 }, () => tf.add(a, a));
    tf.dispose(outs);
    expect(bufferPoolStats().freeBytes).toBe(3 * N * 4);
    a.dispose();
  });

  it('drops at a trim the free buffers that waited a whole epoch unused, and beyond a lowered limit', () => {
    const a = ramp(0);
    tf.add(a, a).dispose(); // freed in epoch e
    expect(bufferPoolStats().freeBytes).toBe(N * 4);
    trimBufferPool(); // e -> e+1: kept (freed during the epoch that just ended)
    expect(bufferPoolStats().freeBytes).toBe(N * 4);
    trimBufferPool(); // unused for all of e+1: dropped
    expect(bufferPoolStats().freeBytes).toBe(0);
    tf.dispose([tf.add(a, a), tf.mul(a, a)]);
    setBufferPoolLimit(N * 4);
    expect(bufferPoolStats().freeBytes).toBe(N * 4);
    a.dispose();
  });
});
