// The backend a user names is the backend a run computes on: RL2_BACKEND is read by every
// command (trainer.backend's default `auto` defers to it), and a named backend that cannot start
// stops the run with the reason instead of falling back to a slower one.
import { rmSync } from 'node:fs';
import { join } from 'node:path';
import { webgpuForTests } from '@rl2/engine/testing';
import { afterAll, afterEach, beforeAll, describe, expect, it } from 'vitest';
import { EXAMPLE_TOKENIZER, QUIET_RUN, rl2, tmp, trainLosses, writeTinyData } from './helpers.js';

const gpu = webgpuForTests();
const dir = tmp('backend');
const model = join(dir, 'model');
const saved = { RL2_BACKEND: process.env.RL2_BACKEND, RL2_NO_NATIVE: process.env.RL2_NO_NATIVE };
let data: ReturnType<typeof writeTinyData>;

beforeAll(async () => {
  data = writeTinyData(dir);
  const init = ['init-model', '--tokenizer', EXAMPLE_TOKENIZER, '--out', model];
  const made = await rl2([...init, '--hidden-size', '8', '--layers', '1', '--heads', '2']);
  expect(made.code, made.stderr).toBe(0);
});
afterEach(() => {
  for (const [k, v] of Object.entries(saved))
    if (v === undefined) delete process.env[k];
    else process.env[k] = v;
});
afterAll(() => rmSync(dir, { recursive: true, force: true }));

const sft = (run: string, extra: string[] = []) => [
  'sft',
  `actor.model_name=${model}`,
  `data.train.path=${data.sftTrain}`,
  'data.test_ratio=0',
  'data.train.batch_size=4',
  'trainer.max_steps=1',
  `trainer.save_dir=${join(dir, run)}`,
  ...QUIET_RUN,
  ...extra,
];

describe('the backend choice is enforced', () => {
  it('RL2_BACKEND=cpu is what rl2 sft runs on (trainer.backend left at auto)', async () => {
    process.env.RL2_BACKEND = 'cpu';
    const r = await rl2(sft('cpu'));
    expect(r.code, r.stderr).toBe(0);
    expect(r.stdout).toMatch(/^rl2 engine: backend cpu, 1 thread$/m);
    expect(trainLosses(join(dir, 'cpu')).size).toBe(1);
  });

  it('trainer.backend=native with no addon stops with the reason, not a cpu run', async () => {
    process.env.RL2_NO_NATIVE = '1';
    const r = await rl2(sft('no-native', ['trainer.backend=native']));
    expect(r.code).toBe(1);
    expect(r.stderr).toMatch(/backend "native" cannot start: RL2_NO_NATIVE=1 is set/);
    expect(r.stdout).not.toMatch(/rl2 engine: backend/);
  });

  it.skipIf(!gpu.ok)(
    'trainer.backend=webgpu trains on the WebGPU adapter and names it',
    async () => {
      const r = await rl2(sft('webgpu', ['trainer.backend=webgpu']));
      expect(r.code, r.stderr).toBe(0);
      expect(r.stdout).toMatch(/^rl2 engine: backend webgpu, adapter .+shader-f16 (yes|no)$/m);
      expect(trainLosses(join(dir, 'webgpu')).size).toBe(1);
    },
  );
});
