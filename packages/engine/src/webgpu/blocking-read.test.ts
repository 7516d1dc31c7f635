// The blocking read on the webgpu backend (CI: Mesa's lavapipe) that host collectives use inside a
// pass: the device's values without an await, also while an asynchronous read has Dawn's event
// tick already scheduled, and the global setImmediate still working for everyone else after it.
import { setImmediate as immediate } from 'node:timers/promises';
import * as tf from '@tensorflow/tfjs-core';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { readValuesNow } from '../device-reads.js';
import { initEngine } from '../init-engine.js';
import { randomValues } from '../testing/backend-check.js';
import { webgpuForTests } from '../testing/webgpu-for-tests.js';
import { blockingReads } from './blocking-read.js';

const gpu = webgpuForTests();

describe.skipIf(!gpu.ok)('readValuesNow on webgpu (a read that waits for the device)', () => {
  beforeAll(() => initEngine({ backend: 'webgpu', env: {}, logger: () => {} }));
  afterAll(() => tf.setBackend('cpu'));

  const a = () => tf.tensor2d(randomValues(96 * 80, 7), [96, 80]);

  it('a matmul computed on the device reads back without an await, equal to await data()', async () => {
    expect(tf.getBackend()).toBe('webgpu');
    const x = a();
    const y = tf.matMul(x, x, false, true);
    const before = blockingReads();
    const got = readValuesNow(y);
    expect(blockingReads()).toBe(before + 1); // from the GPU buffer, not a host copy
    const want = await tf.matMul(x, x, false, true).data();
    expect(got).toBeInstanceOf(Float32Array);
    expect(Array.from(got)).toEqual(Array.from(want));
    expect(readValuesNow(y)).toBe(got); // cached on the tensor, as data() caches
    expect(blockingReads()).toBe(before + 1);
  });

  it('while an asynchronous read is pending (Dawn has its tick scheduled) and for int32', async () => {
    const x = a();
    const pending = tf.mul(x, 3).data();
    const ints = tf.cast(tf.greater(x, 0), 'int32').add(tf.scalar(1, 'int32'));
    const got = readValuesNow(ints);
    expect(got).toBeInstanceOf(Int32Array);
    const xs = await x.data();
    expect(Array.from(got)).toEqual(Array.from(xs, (v) => (v > 0 ? 2 : 1)));
    expect(Array.from(await pending)).toEqual(Array.from(xs, (v) => Math.fround(v * 3)));
    await immediate(); // the wrapped global setImmediate (and its promisified form) still runs
  });
});
