import { join } from 'node:path';
import { Writable } from 'node:stream';
import { nativeForTests } from '@rl2/engine/testing';
import { readPeftAdapter } from '@rl2/models';
import { tempDir } from '@rl2/vitest-config/temp-dir';
import { beforeAll, describe, expect, it } from 'vitest';
import { caseConfig, CHAR_TOKENIZER, writeTrainCase } from '../../test/train-case.js';
import { loadConfig } from '../config/load-config.js';
import { sftConfigSchema } from '../config/sft-config.js';
import { writeRandomCheckpoint } from '../model-init/random-checkpoint.js';
import { checkPpoConfig, ppoConfigSchema } from '../ppo/ppo-config.js';
import { runDpo } from '../dpo/run-dpo.js';
import { runSft } from '../sft/run-sft.js';

// LoRA SFT and DPO on a bfloat16 checkpoint with the base kept in bfloat16
// (actor.lora.base_dtype) against the same runs on a float32 base: the bf16 values are exact in
// float32, so the losses agree up to float32 summation order (1e-5) and the adapters closely.
const hasNative = nativeForTests().ok;
const quiet = {
  stdout: new Writable({ write: (_c, _e, cb) => cb() }) as unknown as NodeJS.WriteStream,
};
let dir: string;

beforeAll(() => {
  dir = tempDir('rl2-lora-bf16-');
  writeTrainCase(dir, { rows: 16, layers: 2 });
  writeRandomCheckpoint({
    arch: 'qwen2',
    tokenizerDir: CHAR_TOKENIZER,
    outDir: join(dir, 'model16'),
    hiddenSize: 32,
    numLayers: 2,
    numHeads: 4,
    numKvHeads: 2,
    initializerRange: 0.2,
    seed: 5,
    dtype: 'bfloat16',
  });
}, 60_000);

const run = (kind: 'sft' | 'dpo', name: string, baseDtype: string) =>
  caseConfig(kind, dir, join(dir, name), [
    `actor.model_name=${join(dir, 'model16')}`,
    'actor.lora.rank=4',
    'actor.lora.alpha=8',
    'actor.scheduler=constant',
    'trainer.backend=native',
    'trainer.threads=2',
    'trainer.max_steps=2',
    'actor.gradient_checkpointing=true',
    `actor.lora.base_dtype=${baseDtype}`,
  ]);

function relDiff(a: ArrayLike<number>, b: ArrayLike<number>): number {
  let m = 0;
  let s = 0;
  for (let i = 0; i < a.length; i++) {
    m = Math.max(m, Math.abs(a[i]! - b[i]!));
    s = Math.max(s, Math.abs(b[i]!));
  }
  return m / s;
}

describe('actor.lora.base_dtype', () => {
  it('defaults to auto; rl2 ppo refuses bfloat16 naming the key', () => {
    const c = loadConfig(sftConfigSchema, {
      overrides: ['actor.model_name=m', 'data.train.path=t'],
    });
    expect(c.actor.lora.base_dtype).toBe('auto');
    const ppo = loadConfig(ppoConfigSchema, {
      overrides: [
        'actor.model_name=/m',
        'data.train.path=/d.jsonl',
        'rollout.env_path=/e.ts',
        'actor.lora.base_dtype=bfloat16',
      ],
    });
    expect(() => checkPpoConfig(ppo)).toThrow(/actor\.lora\.base_dtype=bfloat16: rl2 ppo/);
  });

  it('bfloat16 on the cpu backend is refused naming the key', async () => {
    const config = caseConfig('sft', dir, join(dir, 'cpu'), [
      `actor.model_name=${join(dir, 'model16')}`,
      'actor.lora.rank=4',
      'actor.lora.base_dtype=bfloat16',
    ]);
    await expect(runSft(config, quiet)).rejects.toThrow(
      /actor\.lora\.base_dtype=bfloat16: the active engine backend/,
    );
  });

  it.skipIf(!hasNative)(
    'bfloat16 with a float32 checkpoint is refused naming the key',
    async () => {
      const config = run('sft', 'f32ckpt', 'bfloat16') as Parameters<typeof runSft>[0];
      config.actor.model_name = join(dir, 'model');
      await expect(runSft(config, quiet)).rejects.toThrow(/stores no BF16 matrices/);
    },
  );
});

describe.skipIf(!hasNative)('LoRA on a bfloat16 base', () => {
  it.each(['sft', 'dpo'] as const)(
    '%s: the losses and adapters of the float32-base run (1e-5 relative)',
    async (kind) => {
      const go = kind === 'sft' ? runSft : runDpo;
      const f32 = await go(run(kind, `${kind}-f32`, 'float32') as never, quiet);
      let said = '';
      const stdout = new Writable({
        write: (c, _e, cb) => {
          said += String(c);
          cb();
        },
      });
      const bf16 = await go(run(kind, `${kind}-bf16`, 'auto') as never, {
        stdout: stdout as never,
      });
      expect(said).toMatch(/LoRA base kept in bfloat16 \(actor\.lora\.base_dtype\): 15 matrices/);
      const lf = [...f32.trainLoss.values()];
      const lb = [...bf16.trainLoss.values()];
      expect(lb.length).toBe(2);
      expect(relDiff(lb, lf)).toBeLessThan(1e-5);
      const af = readPeftAdapter(join(dir, `${kind}-f32`, 'step-2', 'adapter')).tensors;
      const ab = readPeftAdapter(join(dir, `${kind}-bf16`, 'step-2', 'adapter')).tensors;
      // AdamW's first steps are about lr * sign(g): an element whose gradient is ~0 may move either
      // way on rounding, so the adapters are compared as a whole (relative L2)
      let d2 = 0;
      let n2 = 0;
      for (const [name, t] of af)
        t.data.forEach((v, i) => {
          d2 += (v - ab.get(name)!.data[i]!) ** 2;
          n2 += v * v;
        });
      expect(Math.sqrt(d2 / n2)).toBeLessThan(1e-3);
    },
    120_000,
  );
});
