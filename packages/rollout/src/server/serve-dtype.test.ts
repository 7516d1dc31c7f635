// `rl2 serve --dtype`: which weight dtype the served checkpoint generates with (auto: the
// checkpoint's bfloat16, else float32; or as given), and the error for a value it does not take.
import { join } from 'node:path';
import { type ModelSpec, initModelCheckpoint } from '@rl2/models';
import { tempDir } from '@rl2/vitest-config/temp-dir';
import { initEngine } from '@rl2/engine';
import { beforeAll, describe, expect, it } from 'vitest';
import { loadCheckpointEngine } from '../inference/checkpoint-engine.js';
import { parseServeDtype } from './serve-model.js';

const spec: ModelSpec = {
  family: 'qwen3',
  vocabSize: 40,
  hiddenSize: 16,
  intermediateSize: 32,
  numLayers: 1,
  numHeads: 2,
  numKvHeads: 1,
};
const dir = tempDir('rl2-serve-dtype-');
const f32 = join(dir, 'f32');
const bf16 = join(dir, 'bf16');

beforeAll(async () => {
  await initEngine({ backend: 'auto', threads: 1, logger: () => {}, env: {} });
  await initModelCheckpoint(f32, spec, { seed: 1 });
  await initModelCheckpoint(bf16, spec, { seed: 1, dtype: 'bfloat16' });
});

describe('rl2 serve --dtype', () => {
  it('auto generates a bfloat16 checkpoint in bfloat16 and a float32 one in float32', async () => {
    for (const [path, want] of [
      [bf16, 'bfloat16'],
      [f32, 'float32'],
    ] as const) {
      const engine = await loadCheckpointEngine(path, { weightDtype: 'auto' });
      expect(engine.weightDtype).toBe(want);
      const out = await engine.generate({
        inputIds: [1, 2, 3],
        sampling: { temperature: 0, max_new_tokens: 4, ignore_eos: true },
      });
      expect(out.tokenIds).toHaveLength(4);
      await engine.close();
    }
  });

  it('an explicit dtype wins over the checkpoint', async () => {
    const engine = await loadCheckpointEngine(bf16, { weightDtype: 'float32' });
    expect(engine.weightDtype).toBe('float32');
    await engine.close();
  });

  it('names the flag and the values it takes', () => {
    expect(parseServeDtype('float16', 'rl2 serve --dtype')).toBe('float16');
    expect(() => parseServeDtype('fp8', 'rl2 serve --dtype')).toThrow(
      'rl2 serve --dtype fp8: use one of auto, float32, bfloat16, float16',
    );
  });
});
