import { existsSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import { Writable } from 'node:stream';
import { initEngine } from '@rl2/engine';
import {
  attachLora,
  loadModel,
  loraParamsFromHost,
  parseSafetensors,
  readPeftAdapter,
  tokenLogits,
} from '@rl2/models';
import * as tf from '@tensorflow/tfjs-core';
import { tempDir } from '@rl2/vitest-config/temp-dir';
import { beforeAll, describe, expect, it } from 'vitest';
import { caseConfig, writeTrainCase } from '../../test/train-case.js';
import { loadConfig } from '../config/load-config.js';
import { rmConfigSchema } from '../config/rm-config.js';
import { sftConfigSchema } from '../config/sft-config.js';
import { runDpo } from '../dpo/run-dpo.js';
import { runRm } from '../rm/run-rm.js';
import { runSft } from '../sft/run-sft.js';

const quiet = {
  stdout: new Writable({ write: (_c, _e, cb) => cb() }) as unknown as NodeJS.WriteStream,
};
const LORA = ['actor.lora.rank=4', 'actor.lora.alpha=8', 'actor.scheduler=constant'];
let dir: string;

beforeAll(async () => {
  await initEngine({ backend: 'cpu', threads: 1, logger: () => {} });
  dir = tempDir('rl2-lora-train-');
  writeTrainCase(dir, { rows: 16, layers: 2 });
}, 60_000);

const optimizerKeys = (ckpt: string) => [
  ...parseSafetensors(new Uint8Array(readFileSync(join(ckpt, 'optimizer.safetensors')))).keys(),
];

describe('actor.lora.* config keys', () => {
  const base = ['actor.model_name=m', 'data.train.path=t'];
  it('default to full training, PEFT names for all seven projections', () => {
    const c = loadConfig(sftConfigSchema, { overrides: base });
    expect(c.actor.lora).toEqual({
      rank: 0,
      alpha: 16,
      dropout: 0,
      target_modules: ['q_proj', 'k_proj', 'v_proj', 'o_proj', 'gate_proj', 'up_proj', 'down_proj'],
      use_rslora: false,
      modules_to_save: [],
      lr_ratio: 1,
      modules_lr_ratio: 1,
      base_dtype: 'auto',
      save_merged: false,
    });
    const set = loadConfig(sftConfigSchema, {
      overrides: [...base, 'actor.lora.rank=8', 'actor.lora.target_modules=[q_proj, v_proj]'],
    });
    expect([set.actor.lora.rank, set.actor.lora.target_modules]).toEqual([8, ['q_proj', 'v_proj']]);
  });

  it.each([
    ['actor.lora.target_modules=[q_proj, qkv_proj]', /actor\.lora\.target_modules/],
    ['actor.lora.rank=2.5', /actor\.lora\.rank/],
    ['actor.lora.dropout=1', /actor\.lora\.dropout/],
    ['actor.lora.ranks=4', /unknown config key "actor\.lora\.ranks"/],
    ['actor.lora.modules_to_save=[embed tokens]', /actor\.lora\.modules_to_save/],
    ['actor.lora.lr_ratio=0', /actor\.lora\.lr_ratio/],
  ])('%s is refused naming the key', (arg, message) => {
    expect(() => loadConfig(sftConfigSchema, { overrides: [...base, arg] })).toThrow(message);
  });

  it('critic.lora.* exists for rl2 rm', () => {
    const c = loadConfig(rmConfigSchema, {
      overrides: ['critic.model_name=m', 'data.train.path=t', 'critic.lora.rank=2'],
    });
    expect(c.critic.lora.rank).toBe(2);
  });

  it('a LoRA base kept in bfloat16 under tensor parallelism is no longer refused for tp (the cpu backend is)', async () => {
    // tp shards the 16-bit base (test/lora-bf16-tensor-parallel.test.ts): only the backend blocks here
    const config = caseConfig('sft', dir, join(dir, 'tp-bf16'), [
      ...LORA,
      'actor.tp_size=2',
      'actor.lora.base_dtype=bfloat16',
    ]);
    const run = runSft(config, quiet);
    await expect(run).rejects.toThrow(
      /actor\.lora\.base_dtype=bfloat16: the active engine backend/,
    );
    await expect(run).rejects.not.toThrow(/tp_size/);
  });
});

describe('rl2 sft with LoRA', () => {
  it('trains only the adapters: optimizer state for them alone, PEFT files beside the checkpoint', async () => {
    const save = join(dir, 'sft');
    const res = await runSft(caseConfig('sft', dir, save, [...LORA, 'trainer.max_steps=2']), quiet);
    expect(res.step).toBe(2);
    const ckpt = join(save, 'step-2');
    expect(existsSync(join(ckpt, 'model'))).toBe(false); // no full copy unless lora.save_merged
    const keys = optimizerKeys(ckpt);
    expect(keys.length).toBe(2 * 2 * 7 * 2); // exp_avg + exp_avg_sq, A + B, 7 modules, 2 layers
    expect(keys.every((k) => /\.lora_[AB]\.weight$/.test(k))).toBe(true);
    const adapter = readPeftAdapter(join(ckpt, 'adapter'));
    expect(adapter.config.base_model_name_or_path).toBe(join(dir, 'model'));
    expect(adapter.spec).toMatchObject({ rank: 4, alpha: 8 });
    const b = adapter.tensors.get('model.layers.1.mlp.down_proj.lora_B.weight')!;
    expect(Math.max(...b.data.map(Math.abs))).toBeGreaterThan(0); // B left zero: it trained
    expect([...res.trainLoss.values()].every(Number.isFinite)).toBe(true);
  }, 60_000);

  it('resumes exactly: an interrupted and resumed run gives the losses of an unbroken one (dropout and recompute on)', async () => {
    const over = [
      ...LORA,
      'actor.lora.dropout=0.2',
      'actor.gradient_checkpointing=true',
      'trainer.max_steps=4',
    ];
    const whole = await runSft(caseConfig('sft', dir, join(dir, 'whole'), over), quiet);
    const parted = join(dir, 'parted');
    const stop = new AbortController();
    const first = await runSft(caseConfig('sft', dir, parted, over), {
      ...quiet,
      signal: stop.signal,
      onStep: (r) => (r.step === 2 ? stop.abort() : undefined),
    });
    expect(first.interrupted).toBe(true);
    const rest = await runSft(
      caseConfig('sft', dir, parted, [...over, 'trainer.load_ckpt_from=latest']),
      quiet,
    );
    const losses = [...first.trainLoss.values(), ...rest.trainLoss.values()];
    expect(losses).toEqual([...whole.trainLoss.values()]);
    // and the dropout is really on: without it the losses differ
    const plain = await runSft(
      caseConfig('sft', dir, join(dir, 'plain'), [
        ...LORA,
        'actor.gradient_checkpointing=true',
        'trainer.max_steps=4',
      ]),
      quiet,
    );
    expect([...plain.trainLoss.values()]).not.toEqual(losses);
  }, 120_000);

  it('refuses to resume with another rank, naming the key and the adapter', async () => {
    const config = caseConfig('sft', dir, join(dir, 'sft'), [
      ...LORA,
      'actor.lora.rank=2',
      'trainer.load_ckpt_from=latest',
    ]);
    await expect(runSft(config, quiet)).rejects.toThrow(
      /adapter .*step-2\/adapter does not fit actor\.lora\.\* \(rank 4 saved, 2 set\)/,
    );
  });

  it('actor.lora.save_merged writes model/: its logits are those of base + adapter', async () => {
    const save = join(dir, 'merged');
    await runSft(caseConfig('sft', dir, save, [...LORA, 'actor.lora.save_merged=true']), quiet);
    const ckpt = join(save, 'step-2');
    const merged = (await loadModel(join(ckpt, 'model'))).model;
    const { model: base } = await loadModel(join(dir, 'model'));
    const adapter = readPeftAdapter(join(ckpt, 'adapter'));
    const { model: adapted } = attachLora(base, loraParamsFromHost(adapter.tensors), adapter.spec);
    const batch = { inputIds: [1, 5, 9, 3, 7, 2, 4, 6], positionIds: [0, 1, 2, 3, 4, 5, 6, 7] };
    const a = tokenLogits(adapted, batch).dataSync();
    const m = tokenLogits(merged, batch).dataSync();
    const baseLogits = (await loadModel(join(dir, 'model'))).model;
    const b = tokenLogits(baseLogits, batch).dataSync();
    let diff = 0;
    let moved = 0;
    for (let i = 0; i < a.length; i++) {
      diff = Math.max(diff, Math.abs(a[i]! - m[i]!));
      moved = Math.max(moved, Math.abs(a[i]! - b[i]!));
    }
    expect(diff).toBeLessThanOrEqual(1e-5);
    expect(moved).toBeGreaterThan(1e-3); // the adapter changed the model
    tf.dispose([
      ...merged.params.values(),
      ...adapted.params.values(),
      ...baseLogits.params.values(),
    ]);
  }, 60_000);
});

describe('actor.lora.modules_to_save', () => {
  const SAVE = [...LORA, 'actor.lora.modules_to_save=[embed_tokens, norm]', 'trainer.max_steps=2'];
  const NORMS = 1 + 2 * 4; // model.norm, and per layer input/post-attention layernorm, q_norm, k_norm

  it('trains copies of the named modules beside the adapters: optimizer state for them, PEFT keys, the base file untouched', async () => {
    const save = join(dir, 'mts');
    await runSft(caseConfig('sft', dir, save, SAVE), quiet);
    const ckpt = join(save, 'step-2');
    const keys = optimizerKeys(ckpt);
    expect(keys.length).toBe(2 * (2 * 7 * 2 + 1 + NORMS));
    expect(keys.filter((k) => !k.includes('.lora_')).length).toBe(2 * (1 + NORMS));
    const file = parseSafetensors(
      new Uint8Array(readFileSync(join(ckpt, 'adapter', 'adapter_model.safetensors'))),
    );
    const emb = file.get('base_model.model.model.embed_tokens.weight')!;
    expect(file.has('base_model.model.model.layers.0.self_attn.q_norm.weight')).toBe(true);
    const adapter = readPeftAdapter(join(ckpt, 'adapter'));
    expect(adapter.config).toMatchObject({
      modules_to_save: ['embed_tokens', 'norm'],
      ensure_weight_tying: true, // the case model ties its LM head to the embedding
    });
    expect(adapter.spec.modulesToSave).toEqual(['embed_tokens', 'norm']);
    const { model: base } = await loadModel(join(dir, 'model'));
    const before = base.params.get('model.embed_tokens.weight')!.dataSync();
    let moved = 0;
    for (let i = 0; i < before.length; i++)
      moved = Math.max(moved, Math.abs(emb.data[i]! - before[i]!));
    expect(moved).toBeGreaterThan(1e-4); // the copy trained
    tf.dispose([...base.params.values()]);
  }, 60_000);

  it('resumes exactly with the saved copies, and refuses another modules_to_save naming the key', async () => {
    const over = [
      ...LORA,
      'actor.lora.modules_to_save=[embed_tokens, norm]',
      'trainer.max_steps=4',
    ];
    const whole = await runSft(caseConfig('sft', dir, join(dir, 'mts-whole'), over), quiet);
    const parted = join(dir, 'mts-parted');
    const stop = new AbortController();
    const first = await runSft(caseConfig('sft', dir, parted, over), {
      ...quiet,
      signal: stop.signal,
      onStep: (r) => (r.step === 2 ? stop.abort() : undefined),
    });
    const resume = [...over, 'trainer.load_ckpt_from=latest'];
    const rest = await runSft(caseConfig('sft', dir, parted, resume), quiet);
    const losses = [...first.trainLoss.values(), ...rest.trainLoss.values()];
    expect(losses).toEqual([...whole.trainLoss.values()]);
    const other = [...resume, 'actor.lora.modules_to_save=[norm]'];
    await expect(runSft(caseConfig('sft', dir, parted, other), quiet)).rejects.toThrow(
      /modules_to_save \[embed_tokens,norm\] saved, \[norm\] set/,
    );
  }, 120_000);

  it('a name that matches no module is refused naming it', async () => {
    const config = caseConfig('sft', dir, join(dir, 'mts-bad'), [
      ...LORA,
      'actor.lora.modules_to_save=[embed_token5]',
    ]);
    await expect(runSft(config, quiet)).rejects.toThrow(
      /modules_to_save "embed_token5" names no module/,
    );
  });

  it('with actor.lora.base_dtype=bfloat16 is refused naming both keys', async () => {
    const config = caseConfig('sft', dir, join(dir, 'mts-bf16'), [
      ...SAVE,
      'actor.lora.base_dtype=bfloat16',
    ]);
    await expect(runSft(config, quiet)).rejects.toThrow(
      /actor\.lora\.base_dtype=bfloat16: .*actor\.lora\.modules_to_save/,
    );
  });

  it('dpo: the reference stays the base (step 1 at log 2) while the copies train', async () => {
    const config = caseConfig('dpo', dir, join(dir, 'mts-dpo'), SAVE);
    const res = await runDpo(config, quiet);
    expect(res.trainLoss.get(1)).toBeCloseTo(Math.log(2), 6);
    expect(res.trainLoss.get(2)).not.toBeCloseTo(Math.log(2), 6);
    const keys = optimizerKeys(join(dir, 'mts-dpo', 'step-2'));
    expect(keys.filter((k) => k.endsWith('.model.embed_tokens.weight')).length).toBe(2);
  }, 60_000);
});

describe('LoRA runs leave no tensors behind', () => {
  it('SFT and DPO with LoRA (dropout, recompute, validation and a save every step): live tensors back where they were', async () => {
    const every = [
      ...LORA,
      'actor.lora.dropout=0.1',
      'actor.gradient_checkpointing=true',
      'data.test_ratio=0.25',
      'trainer.test_freq=1',
      'trainer.save_freq=1',
      'actor.lora.save_merged=true',
      'actor.lora.modules_to_save=[norm]',
    ];
    await runSft(caseConfig('sft', dir, join(dir, 'leak-warm'), every), quiet);
    const before = tf.memory().numTensors;
    const live: number[] = [];
    await runSft(caseConfig('sft', dir, join(dir, 'leak-sft'), every), {
      ...quiet,
      onStep: () => live.push(tf.memory().numTensors),
    });
    expect(new Set(live).size, live.join(' ')).toBe(1); // nothing grows from step to step
    expect(tf.memory().numTensors, 'after rl2 sft').toBe(before);
    await runDpo(caseConfig('dpo', dir, join(dir, 'leak-dpo'), every), quiet);
    expect(tf.memory().numTensors, 'after rl2 dpo').toBe(before);
  }, 120_000);
});

describe('rl2 dpo and rl2 rm with LoRA', () => {
  it('dpo: the reference is the base without the adapter, so step 1 starts at log 2 (B = 0)', async () => {
    const config = caseConfig('dpo', dir, join(dir, 'dpo'), [...LORA, 'trainer.max_steps=2']);
    const res = await runDpo(config, quiet);
    expect(res.trainLoss.get(1)).toBeCloseTo(Math.log(2), 6);
    expect(res.trainLoss.get(2)).not.toBeCloseTo(Math.log(2), 6); // the adapter moved away from it
    expect(optimizerKeys(join(dir, 'dpo', 'step-2')).every((k) => k.includes('.lora_'))).toBe(true);
  }, 60_000);

  it('rm: adapters, the new score head and critic.lora.modules_to_save train; PEFT saves head and norms as modules_to_save', async () => {
    const save = join(dir, 'rm');
    const config = loadConfig(rmConfigSchema, {
      overrides: [
        `critic.model_name=${join(dir, 'model')}`,
        `data.train.path=${join(dir, 'pairs.jsonl')}`,
        'data.train.apply_chat_template=false',
        'data.train.batch_size=8',
        'data.test_ratio=0',
        'critic.max_length_per_device=40',
        'critic.lr=0.01',
        'critic.lora.rank=2',
        'critic.lora.modules_to_save=[norm]',
        'critic.gradient_checkpointing=false',
        'trainer.max_steps=2',
        'trainer.backend=cpu',
        'trainer.threads=1',
        'trainer.progress=none',
        'trainer.use_tensorboard=false',
        'trainer.report=false',
        `trainer.save_dir=${save}`,
      ],
    });
    await runRm(config, quiet);
    const adapter = readPeftAdapter(join(save, 'step-2', 'adapter'));
    expect(adapter.config).toMatchObject({
      task_type: 'TOKEN_CLS',
      modules_to_save: ['norm', 'score'],
    });
    expect(adapter.tensors.has('model.layers.1.post_attention_layernorm.weight')).toBe(true);
    expect(Math.abs(adapter.tensors.get('score.weight')!.data[0]!)).toBeGreaterThan(0);
    expect(optimizerKeys(join(save, 'step-2')).filter((k) => k.includes('score.')).length).toBe(4);
    expect(
      optimizerKeys(join(save, 'step-2')).filter((k) => k.endsWith('norm.weight')).length,
    ).toBe(2 * 9);
  }, 60_000);
});
