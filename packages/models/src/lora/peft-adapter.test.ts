import { mkdirSync, readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import * as tf from '@tensorflow/tfjs-core';
import { initEngine } from '@rl2/engine';
import { tempDir } from '@rl2/vitest-config/temp-dir';
import { beforeAll, describe, expect, it } from 'vitest';
import { parseSafetensors } from '../checkpoint/safetensors-reader.js';
import { loadModel } from '../checkpoint/load-checkpoint.js';
import { initLoraParams } from './lora-params.js';
import type { LoraSpec } from './lora-spec.js';
import { peftLoraConfig, readPeftAdapter, writePeftAdapter } from './peft-adapter.js';

const FIX = join(import.meta.dirname, '..', '..', 'fixtures');
const tmp = tempDir('rl2-models-peft-');
const spec: LoraSpec = {
  rank: 4,
  alpha: 8,
  dropout: 0.05,
  targetModules: ['q_proj', 'down_proj'],
  useRslora: true,
};

beforeAll(async () => {
  await initEngine({ backend: 'cpu', logger: () => {} });
});

describe('PEFT adapter files', () => {
  it("are written under PEFT's keys and config fields, and read back the same", async () => {
    const { model } = await loadModel(join(FIX, 'qwen3'));
    const adapters = initLoraParams(model.config, spec, 5);
    const dir = join(tmp, 'adapter');
    await writePeftAdapter(dir, adapters, peftLoraConfig(spec, 'Qwen/Qwen3-0.6B', 'causal-lm'));
    const config = JSON.parse(readFileSync(join(dir, 'adapter_config.json'), 'utf8'));
    expect(config).toMatchObject({
      peft_type: 'LORA',
      task_type: 'CAUSAL_LM',
      base_model_name_or_path: 'Qwen/Qwen3-0.6B',
      r: 4,
      lora_alpha: 8,
      lora_dropout: 0.05,
      target_modules: ['q_proj', 'down_proj'],
      use_rslora: true,
    });
    const file = parseSafetensors(
      new Uint8Array(readFileSync(join(dir, 'adapter_model.safetensors'))),
    );
    expect(
      file.get('base_model.model.model.layers.1.self_attn.q_proj.lora_A.weight')!.shape,
    ).toEqual([4, 32]);
    expect(file.get('base_model.model.model.layers.1.mlp.down_proj.lora_B.weight')!.shape).toEqual([
      32, 4,
    ]);
    expect(file.size).toBe(2 * 2 * model.config.numLayers);
    const back = readPeftAdapter(dir);
    expect(back.spec).toEqual(spec);
    for (const [name, v] of adapters) expect(back.tensors.get(name)!.data).toEqual(v.dataSync());
    tf.dispose([...adapters.values()]);
  });

  it('carry modules_to_save: the copies under PEFT keys, the config (tied: ensure_weight_tying), read back', async () => {
    const { model } = await loadModel(join(FIX, 'qwen3'));
    const saved: LoraSpec = { ...spec, modulesToSave: ['embed_tokens', 'model.norm'] };
    const tensors = initLoraParams(model.config, saved, 5);
    tensors.set('model.embed_tokens.weight', model.params.get('model.embed_tokens.weight')!);
    tensors.set('model.norm.weight', model.params.get('model.norm.weight')!);
    const dir = join(tmp, 'saved');
    await writePeftAdapter(dir, tensors, peftLoraConfig(saved, 'b', 'causal-lm', true));
    const config = JSON.parse(readFileSync(join(dir, 'adapter_config.json'), 'utf8'));
    expect(config).toMatchObject({
      modules_to_save: ['embed_tokens', 'model.norm'],
      ensure_weight_tying: true,
    });
    expect(peftLoraConfig(saved, 'b', 'causal-lm', false).ensure_weight_tying).toBeUndefined();
    const file = parseSafetensors(
      new Uint8Array(readFileSync(join(dir, 'adapter_model.safetensors'))),
    );
    // get_peft_model_state_dict drops the copy's `modules_to_save.default.`
    expect(file.get('base_model.model.model.embed_tokens.weight')!.shape).toEqual(
      model.params.get('model.embed_tokens.weight')!.shape,
    );
    expect(file.has('base_model.model.model.norm.weight')).toBe(true);
    const back = readPeftAdapter(dir);
    expect(back.spec).toEqual(saved);
    expect(back.tensors.get('model.norm.weight')!.data).toEqual(
      model.params.get('model.norm.weight')!.dataSync(),
    );
    // a value model's score head stays out of the spec: it is saved by head
    const value = peftLoraConfig(saved, 'b', 'value');
    expect(value.modules_to_save).toEqual(['embed_tokens', 'model.norm', 'score']);
  });

  it('refuse what is not a LoRA adapter of the known projections, naming the file', () => {
    const dir = join(tmp, 'ia3');
    const write = (c: object) => {
      mkdirSync(dir, { recursive: true });
      writeFileSync(join(dir, 'adapter_config.json'), JSON.stringify(c));
    };
    write({ peft_type: 'IA3' });
    expect(() => readPeftAdapter(dir)).toThrow(/ia3\/adapter_config\.json: peft_type is IA3/);
    write({ peft_type: 'LORA', r: 4, lora_alpha: 8, target_modules: 'all-linear' });
    expect(() => readPeftAdapter(dir)).toThrow(/target_modules "all-linear"/);
  });
});
