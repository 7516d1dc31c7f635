import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { initTinyModel, rl2, tmp, trainLosses, writeTinyData } from './helpers.js';

// Without native kernels and tfjs-node, `auto` would pick wasm, which cannot train: the engine,
// started for training, skips it for cpu and says so.
process.env.RL2_NO_NATIVE = '1';

describe('backend fallback', () => {
  it('trainer.backend=wasm is refused with the reason; auto without native kernels trains on cpu', async () => {
    const dir = tmp('wasm');
    const model = join(dir, 'model');
    const data = writeTinyData(dir);
    await initTinyModel(model, 8);
    const args = [
      'sft',
      `actor.model_name=${model}`,
      `data.train.path=${data.sftTrain}`,
      'data.test_ratio=0',
      'data.train.batch_size=4',
      'trainer.max_steps=2',
      `trainer.save_dir=${join(dir, 'run')}`,
      'trainer.progress=none',
    ];
    const refused = await rl2([...args, 'trainer.backend=wasm']);
    expect(refused.code).toBe(1);
    expect(refused.stderr).toContain('UnsortedSegmentSum');
    const r = await rl2(args);
    expect(r.code, r.stderr).toBe(0);
    expect(r.stdout).toMatch(/rl2 engine: backend cpu.*wasm skipped for training/);
    expect(trainLosses(join(dir, 'run')).size).toBe(2);
  });
});
