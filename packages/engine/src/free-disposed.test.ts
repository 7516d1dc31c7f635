import type { MathBackendCPU } from '@tensorflow/tfjs-backend-cpu';
import * as tf from '@tensorflow/tfjs-core';
import { describe, expect, it } from 'vitest';
import { freeDisposedBuffers } from './free-disposed.js';
import { initEngine } from './init-engine.js';

describe('freeDisposedBuffers', () => {
  it('collects the Float32Array of a disposed tensor at once, and not that of a live one', async () => {
    await initEngine({ backend: 'cpu', env: {}, logger: () => {} });
    const collected: string[] = [];
    const registry = new FinalizationRegistry((name: string) => collected.push(name));
    const [dead, live] = [tf.zeros([256, 1024]), tf.ones([256, 1024])];
    for (const [name, t] of [
      ['dead', dead],
      ['live', live],
    ] as const) {
      const values = (tf.backend() as unknown as MathBackendCPU).data.get(t.dataId)!.values;
      registry.register(values as object, name);
    }
    dead.dispose();
    freeDisposedBuffers();
    // finalizers run as a task after the collection
    await new Promise((done) => setTimeout(done, 50));
    expect(collected).toEqual(['dead']);
    expect(live.dataSync()[0]).toBe(1);
    live.dispose();
  });
});
