import { cpSync, readFileSync, statSync, truncateSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { tempDir } from '@rl2/vitest-config/temp-dir';
import { beforeAll, describe, expect, it } from 'vitest';
import { initEngine } from '@rl2/engine';
import { disposeParams, updateParams } from '../model/param-map.js';
import { readCheckpointWeights } from './checkpoint-reader.js';
import { loadModel } from './load-checkpoint.js';
import { parseSafetensors } from './safetensors-reader.js';
import { saveModel } from './save-model.js';

const FIX = join(import.meta.dirname, '..', '..', 'fixtures');
const tmp = tempDir('rl2-models-ckpt-');

beforeAll(async () => {
  await initEngine({ backend: 'cpu', logger: () => {} });
});

describe('checkpoints', () => {
  it.each(['llama-bf16-sharded', 'llama-fp16'])(
    '%s loads to the values torch rounds to',
    async (folder) => {
      const weights = await readCheckpointWeights(join(FIX, folder));
      const expected = parseSafetensors(
        new Uint8Array(readFileSync(join(FIX, folder, 'expected-fp32.safetensors'))),
      );
      expect(weights.size).toBe(expected.size);
      for (const [name, t] of expected) expect(weights.get(name)!.data, name).toEqual(t.data);
    },
  );

  it('a checkpoint written here reloads identically (fp32 sharded, bf16 single)', async () => {
    const { model } = await loadModel(join(FIX, 'qwen3'));
    const files = await saveModel(join(tmp, 'sharded'), model, { maxShardSize: 20_000 });
    expect(files.some((f) => f.endsWith('model.safetensors.index.json'))).toBe(true);
    const back = await loadModel(join(tmp, 'sharded'));
    for (const [name, v] of model.params)
      expect(back.model.params.get(name)!.dataSync(), name).toEqual(v.dataSync());
    expect(back.model.config.raw).toEqual({ ...model.config.raw, torch_dtype: 'float32' });
    await saveModel(join(tmp, 'bf16'), model, { dtype: 'bfloat16' });
    const bf = await readCheckpointWeights(join(tmp, 'bf16'));
    const w = model.params.get('model.layers.0.mlp.up_proj.weight')!.dataSync();
    const b = bf.get('model.layers.0.mlp.up_proj.weight')!.data;
    for (let i = 0; i < w.length; i++)
      expect(Math.abs(b[i]! - w[i]!)).toBeLessThanOrEqual(Math.abs(w[i]!) * 2 ** -8);
    disposeParams(model.params);
    disposeParams(back.model.params);
  });

  it('updateParams copies weights into a live model by name and checks shapes', async () => {
    const { model } = await loadModel(join(FIX, 'llama'));
    const weights = await readCheckpointWeights(join(FIX, 'llama-bf16-sharded'));
    updateParams(model.params, weights);
    const name = 'model.layers.1.mlp.down_proj.weight';
    expect(model.params.get(name)!.dataSync()).toEqual(weights.get(name)!.data);
    const bad = new Map([[name, { shape: [2, 2], data: new Float32Array(4) }]]);
    expect(() => updateParams(model.params, bad)).toThrow(
      /"model\.layers\.1\.mlp\.down_proj\.weight" has shape \[2,2\]/,
    );
    disposeParams(model.params);
  });

  it('names missing tensors and the folder', async () => {
    const { model } = await loadModel(join(FIX, 'qwen2'));
    model.params.delete('model.norm.weight');
    await saveModel(join(tmp, 'broken'), model);
    await expect(loadModel(join(tmp, 'broken'))).rejects.toThrow(
      /broken: missing 1 tensor\(s\) for Qwen2ForCausalLM: model\.norm\.weight/,
    );
    disposeParams(model.params);
  });

  it('names the file of a config.json that is not JSON and of a truncated model.safetensors', async () => {
    const dir = join(tmp, 'damaged');
    cpSync(join(FIX, 'qwen2'), dir, { recursive: true });
    const config = join(dir, 'config.json');
    const good = readFileSync(config, 'utf8');
    writeFileSync(config, good.slice(0, 40));
    await expect(loadModel(dir)).rejects.toThrow(`${config}: is not valid JSON`);
    writeFileSync(config, good);
    const weights = join(dir, 'model.safetensors');
    truncateSync(weights, statSync(weights).size - 1000);
    await expect(loadModel(dir)).rejects.toThrow(
      `${weights}: the file is 1000 bytes shorter than its header says`,
    );
  });

  it('loads a causal-LM checkpoint as a value model with a zero score head', async () => {
    const { model } = await loadModel(join(FIX, 'qwen2'), { head: 'value' });
    expect(model.config.architecture).toBe('Qwen2ForTokenClassification');
    expect(model.params.get('score.weight')!.shape).toEqual([1, 32]);
    expect(model.params.has('lm_head.weight')).toBe(false);
    disposeParams(model.params);
  });
});
