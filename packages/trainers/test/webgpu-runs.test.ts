// rl2 sft and rl2 dpo on the webgpu backend (CI: Mesa's lavapipe, a software Vulkan adapter)
// give the native backend's losses, validation and saved weights, and really run on webgpu.
import { mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { webgpuForTests } from '@rl2/engine/testing';
import * as tf from '@tensorflow/tfjs-core';
import { afterAll, describe, expect, it } from 'vitest';
import { runDpo } from '../src/dpo/run-dpo.js';
import { runSft } from '../src/sft/run-sft.js';
import { type CaseKind, caseConfig, writeTrainCase } from './train-case.js';

const gpu = webgpuForTests();
const dir = mkdtempSync(join(tmpdir(), 'rl2-webgpu-runs-'));
afterAll(() => rmSync(dir, { recursive: true, force: true }));

/** One run on `backend`: its per-step train losses, its engine line, its last validation. */
async function run(kind: CaseKind, backend: string) {
  const lines: string[] = [];
  const out = { write: (s: string) => lines.push(s) > 0 } as unknown as NodeJS.WriteStream;
  const saveDir = join(dir, `${kind}-${backend}`);
  const overrides = [
    `trainer.backend=${backend}`,
    'data.test_ratio=0.25',
    'trainer.test_freq=1',
    'trainer.save_freq=2',
  ];
  const res =
    kind === 'sft'
      ? await runSft(caseConfig('sft', dir, saveDir, overrides), { stdout: out })
      : await runDpo(caseConfig('dpo', dir, saveDir, overrides), { stdout: out });
  return {
    losses: [...res.trainLoss.values()],
    test: res.lastTest ?? {},
    engine:
      lines
        .join('')
        .split('\n')
        .find((l) => l.startsWith('rl2 engine:')) ?? '',
    ranOn: tf.getBackend(),
    weights: readFileSync(join(saveDir, 'step-2', 'model', 'model.safetensors')),
  };
}

function expectRelClose(got: number, want: number, what: string) {
  expect(Math.abs(got - want) / Math.max(Math.abs(want), 1e-6), what).toBeLessThan(1e-4);
}

/** Float32 weights of a one-file safetensors checkpoint (header skipped). */
function floats(file: Buffer): Float32Array {
  const headerLength = Number(file.readBigUInt64LE(0));
  const body = file.subarray(8 + headerLength);
  return new Float32Array(body.buffer.slice(body.byteOffset, body.byteOffset + body.length));
}

describe.skipIf(!gpu.ok)('training on webgpu equals native', () => {
  writeTrainCase(dir, { rows: 32 }); // 24 train rows: 3 steps of 8, 2 run

  it.each(['sft', 'dpo'] as const)(
    'rl2 %s: train losses, validation and saved weights within 1e-4 of native',
    async (kind) => {
      const native = await run(kind, 'native');
      const webgpu = await run(kind, 'webgpu');
      expect(native.engine).toMatch(/^rl2 engine: backend native/);
      expect(webgpu.engine).toMatch(/^rl2 engine: backend webgpu, adapter /);
      expect(webgpu.ranOn).toBe('webgpu'); // asked for webgpu: computed there, not elsewhere
      expect(webgpu.losses).toHaveLength(2);
      for (const [i, l] of webgpu.losses.entries())
        expectRelClose(l, native.losses[i]!, `step ${i + 1} loss`);
      for (const [k, v] of Object.entries(native.test))
        if (typeof v === 'number' && k.startsWith('test/'))
          expectRelClose(webgpu.test[k] as number, v, k);
      const [a, b] = [floats(webgpu.weights), floats(native.weights)];
      expect(a.length).toBe(b.length);
      let worst = 0;
      for (let i = 0; i < a.length; i++) worst = Math.max(worst, Math.abs(a[i]! - b[i]!));
      expect(worst, 'largest weight difference after 2 steps').toBeLessThan(1e-4);
      await tf.setBackend('cpu');
    },
    240_000,
  );
});
