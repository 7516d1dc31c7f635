import * as tf from '@tensorflow/tfjs-core';
import { beforeAll, describe, expect, it } from 'vitest';
import { initEngine } from './init-engine.js';
import { setProfilePhase, startKernelProfile, stopKernelProfile } from './kernel-profile.js';
import { nativeForTests } from './testing/native-for-tests.js';

const load = nativeForTests();

describe.skipIf(!load.ok)('kernel profile', () => {
  beforeAll(async () => {
    await initEngine({ backend: 'native', threads: 1, logger: () => {}, env: {} });
  });

  it('counts each kernel per phase, a nested kernel apart from the one that called it', () => {
    const a = tf.ones([64, 64]);
    const bias = tf.ones([64]);
    startKernelProfile();
    setProfilePhase('first');
    tf.add(a, a).dispose();
    tf.add(a, a).dispose();
    setProfilePhase('second');
    // _FusedMatMul dispatches Add for its bias inside itself
    tf.fused.matMul({ a, b: a, bias }).dispose();
    const p = stopKernelProfile();
    tf.dispose([a, bias]);
    expect(p.kernels.get('first')?.get('Add')?.calls).toBe(2);
    const second = p.kernels.get('second');
    expect(second?.get('_FusedMatMul')?.calls).toBe(1);
    expect(second?.get('Add')?.calls).toBe(1);
    for (const byKernel of p.kernels.values())
      for (const t of byKernel.values()) expect(t.wallMs).toBeGreaterThanOrEqual(0);
    expect([...p.phases.keys()].sort()).toEqual(['first', 'other', 'second']);
    expect(p.marks.map((m) => m.phase)).toEqual(['other', 'first', 'second', 'other']);
  });

  it('records nothing while stopped', () => {
    stopKernelProfile();
    tf.add(tf.ones([4]), tf.ones([4])).dispose();
    startKernelProfile();
    expect(stopKernelProfile().kernels.size).toBe(0);
  });
});
