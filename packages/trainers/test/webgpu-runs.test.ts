// rl2 sft and rl2 dpo on the webgpu backend (CI: Mesa's lavapipe, a software Vulkan adapter)
// give the native backend's losses, validation and saved weights, and really run on webgpu; so do
// 2 or 4 webgpu ranks (each its own adapter) under data, FSDP, tensor and context parallelism.
import { readFileSync, rmSync } from 'node:fs';
import { join } from 'node:path';
import { webgpuForTests } from '@rl2/engine/testing';
import { tempDir } from '@rl2/vitest-config/temp-dir';
import * as tf from '@tensorflow/tfjs-core';
import { describe, expect, it } from 'vitest';
import { runDpo } from '../src/dpo/run-dpo.js';
import { loadConfig } from '../src/config/load-config.js';
import { ppoConfigSchema } from '../src/ppo/ppo-config.js';
import { runPpo } from '../src/ppo/run-ppo.js';
import { QUIET_TRAINER, tinyRun } from './ppo-fixtures/tiny-run.js';
import { runSft } from '../src/sft/run-sft.js';
import { ppoOnRanks, readSafetensors, relTensor, runOnRanks, runSingle } from './rank-runs.js';
import { type CaseKind, caseConfig, writeTrainCase } from './train-case.js';

const gpu = webgpuForTests();
const dir = tempDir('rl2-webgpu-runs-');
/** The multi-rank case: the native model-parallel tests' model (2 layers, 4 query / 2 kv heads, vocabulary 100). */
const ranksDir = tempDir('rl2-webgpu-ranks-');

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
    test: (res.lastTest ?? {}) as Record<string, unknown>,
    engine:
      lines
        .join('')
        .split('\n')
        .find((l) => l.startsWith('rl2 engine:')) ?? '',
    ranOn: tf.getBackend(),
    weights: readFileSync(join(saveDir, 'step-2', 'model', 'model.safetensors')),
  };
}

/** |got - want| relative to |want| (to 1e-3 near 0: a GRPO loss is ~1e-7, advantages sum to 0). */
const relDiff = (got: number, want: number) =>
  Math.abs(got - want) / Math.max(Math.abs(want), 1e-3);

/** Within 1e-4 relative; near 0 within 1e-7. */
function expectRelClose(got: number, want: number, what: string) {
  expect(relDiff(got, want), `${what}: ${got} vs ${want}`).toBeLessThan(1e-4);
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

/** One GRPO step (with a KL term: the reference pass runs too) on `backend`. */
async function ppoStep(backend: string, t: ReturnType<typeof tinyRun>) {
  const saveDir = join(t.dir, backend);
  const config = loadConfig(ppoConfigSchema, {
    overrides: [
      ...t.overrides(),
      ...QUIET_TRAINER,
      'rollout.train_prompts_per_rollout=2',
      'rollout.responses_per_prompt=4',
      'rollout.train_sampling_params.max_new_tokens=4',
      'adv.estimator=grpo',
      'kl.coef=0.01',
      'kl.type=loss',
      'actor.update_per_rollout=2',
      'trainer.max_steps=1',
      `trainer.backend=${backend}`,
      `trainer.save_dir=${saveDir}`,
    ],
  });
  const res = await runPpo(config, {
    stdout: { write: () => true } as unknown as NodeJS.WriteStream,
  });
  const rollout = readFileSync(join(saveDir, 'rollouts', 'step-1.jsonl'), 'utf8');
  return { step: res.steps[0]!, rollout, ranOn: tf.getBackend() };
}

/** The rollout file's samples: token ids, engine log-probs and reward of each. */
function samples(jsonl: string) {
  return jsonl
    .split('\n')
    .filter(Boolean)
    .map((line) => {
      const r = JSON.parse(line) as {
        reward: number;
        sequences: { tokenIds: number[]; logprobs: number[] }[];
      };
      return {
        tokens: r.sequences.flatMap((s) => s.tokenIds),
        logprobs: r.sequences.flatMap((s) => s.logprobs),
        reward: r.reward,
      };
    });
}

describe.skipIf(!gpu.ok)('a PPO step on webgpu equals native', () => {
  it('rl2 ppo (GRPO, k3 KL loss, 2 updates): same rollout, losses and KL within 1e-4', async () => {
    const t = tinyRun('webgpu');
    try {
      const native = await ppoStep('native', t);
      const webgpu = await ppoStep('webgpu', t);
      expect(webgpu.ranOn).toBe('webgpu');
      // the same sampled tokens and rewards; the engine's log-probs within float32 rounding
      const [got, want] = [samples(webgpu.rollout), samples(native.rollout)];
      expect(got.map((g) => g.tokens)).toEqual(want.map((w) => w.tokens));
      expect(got.map((g) => g.reward)).toEqual(want.map((w) => w.reward));
      got.forEach((g, i) => {
        g.logprobs.forEach((lp, j) => {
          expect(Math.abs(lp - want[i]!.logprobs[j]!)).toBeLessThan(1e-5);
        });
      });
      for (const key of [
        'actor/loss',
        'actor/klLoss',
        'actor/approxKl',
        'actor/entropy',
        'actor/grad_norm',
      ])
        expectRelClose(webgpu.step[key] as number, native.step[key] as number, key);
      await tf.setBackend('cpu');
    } finally {
      rmSync(t.dir, { recursive: true, force: true });
    }
  }, 240_000);
});

/**
 * DPO's runs on ranks use AdamW eps 1e-6, as test/model-parallel.test.ts's do: DPO's embedding
 * gradient has entries near the default eps (1e-8), where AdamW's step lr * g / (|g| + eps)
 * magnifies float32 rounding. With 1e-8 one webgpu process (no parallelism) already saves an
 * embedding 1.6e-4 relative from native's, and CP(2) on 2 webgpu ranks 1.4e-4 (measured
 * 2026-12-06); with 1e-6 the ranks' tensors are within 1.9e-5 (TP 1.6e-5, CP 1.9e-5).
 */
const DPO_EPS = 'actor.eps=1e-6';

describe.skipIf(!gpu.ok)(
  'several ranks on webgpu (one adapter per rank, collectives through host memory)',
  () => {
    writeTrainCase(ranksDir, { arch: 'qwen3', layers: 2, heads: 4, kvHeads: 2, vocabSize: 100 });
    it.each([
      ['sft', 'data parallel', 2, 'dp', [], false],
      ['sft', 'FSDP (ZeRO-3, actor.ddp_size=1)', 2, 'fsdp', ['actor.ddp_size=1'], false],
      ['sft', 'tensor parallelism (actor.tp_size=2)', 2, 'tp', ['actor.tp_size=2'], true],
      ['sft', 'context parallelism (actor.cp_size=2)', 2, 'cp', ['actor.cp_size=2'], true],
      ['dpo', 'tensor parallelism (actor.tp_size=2)', 2, 'dpo-tp', ['actor.tp_size=2'], true],
      ['dpo', 'context parallelism (actor.cp_size=2)', 2, 'dpo-cp', ['actor.cp_size=2'], true],
      // 4 ranks: a tp pair sees the same sequence half, a cp pair holds the same shards; with
      // FSDP each tp shard's weights and AdamW state are split over 2 ranks, 2 batches a step
      ['sft', 'TP(2) x CP(2)', 4, 'tp-cp', ['actor.tp_size=2', 'actor.cp_size=2'], true],
      ['dpo', 'TP(2) x CP(2)', 4, 'dpo-tp-cp', ['actor.tp_size=2', 'actor.cp_size=2'], true],
      ['sft', 'TP(2) x FSDP(2)', 4, 'tp-fsdp', ['actor.tp_size=2', 'actor.ddp_size=1'], true],
      [
        'sft',
        'CP(2) with FSDP over both ranks',
        2,
        'cp-fsdp',
        ['actor.cp_size=2', 'actor.ddp_size=1'],
        true,
      ],
    ] as [CaseKind, string, number, string, string[], boolean][])(
      "rl2 %s with %s on %i webgpu ranks: all compute on webgpu; the single native process's losses, grad norms and checkpoint (1e-4)",
      async (kind, _, n, name, extra, inPass) => {
        const common = kind === 'dpo' ? [DPO_EPS] : [];
        const single = await runSingle(kind, ranksDir, join(ranksDir, `${name}-single`), [
          'trainer.backend=native',
          ...common,
        ]);
        const saveDir = join(ranksDir, `${name}-webgpu`);
        const ranks = await runOnRanks(kind, n, ranksDir, saveDir, [
          'trainer.backend=webgpu',
          ...common,
          ...extra,
        ]);
        expect(ranks.map((r) => r.rank)).toEqual(Array.from({ length: n }, (_, i) => i));
        let worst = 0;
        for (const r of ranks) {
          // asked for webgpu: each rank started its own adapter and computed there
          expect(r.engine).toMatch(/^rl2 engine: backend webgpu, adapter /);
          expect(r.backend).toBe('webgpu');
          // tp and cp all-reduce / all-gather activations and their gradients inside the pass:
          // read from GPU buffers, waiting for the device; dp and FSDP read between passes
          if (inPass) expect(r.blockingReads).toBeGreaterThan(0);
          else expect(r.blockingReads).toBe(0);
          expect(r.steps).toHaveLength(2);
          for (const [i, step] of r.steps.entries()) {
            expectRelClose(step.loss, single.losses[i]!, `rank ${r.rank} step ${i + 1} loss`);
            expectRelClose(
              step.gradNorm,
              single.gradNorms[i]!,
              `rank ${r.rank} step ${i + 1} grad norm`,
            );
            worst = Math.max(worst, relDiff(step.loss, single.losses[i]!));
          }
        }
        // the step-2 checkpoint rank 0 wrote (tp shards gathered): every weight and AdamW moment
        let worstTensor = 0;
        for (const [file, want] of [
          ['model/model.safetensors', single.weights],
          ['optimizer.safetensors', single.optimizer],
        ] as const) {
          const got = readSafetensors(join(saveDir, 'step-2', file));
          expect([...got.keys()].sort()).toEqual([...want.keys()].sort());
          for (const [key, w] of want) {
            const err = relTensor(got.get(key), w);
            expect(err, `${file} ${key}: ||webgpu ranks - native|| / ||native||`).toBeLessThan(
              1e-4,
            );
            worstTensor = Math.max(worstTensor, err);
          }
        }
        console.log(
          `${kind} ${name} on ${n} webgpu ranks: largest loss difference ${worst.toExponential(2)} relative, ` +
            `largest saved tensor difference ${worstTensor.toExponential(2)}; ` +
            `blocking reads per rank ${ranks.map((r) => r.blockingReads).join(', ')}`,
        );
      },
      240_000,
    );

    it.each([
      ['FSDP (actor.ddp_size=1)', ['actor.ddp_size=1'], false],
      ['tensor parallelism (actor.tp_size=2)', ['actor.tp_size=2'], true],
      ['context parallelism (actor.cp_size=2)', ['actor.cp_size=2'], true],
    ])(
      "rl2 ppo (GRPO) with %s on 2 webgpu ranks: one native process's step metrics (1e-4)",
      async (_, extra, inPass) => {
        const t = tinyRun('webgpu-ranks-ppo', { heads: 4, kvHeads: 2, vocabSize: 34 });
        try {
          const overrides = (backend: string, more: string[]) => [
            ...t.overrides(),
            ...QUIET_TRAINER,
            'rollout.train_prompts_per_rollout=2',
            'rollout.responses_per_prompt=4',
            'rollout.train_sampling_params.max_new_tokens=4',
            'rollout.dynamic_filtering=false',
            'adv.estimator=grpo',
            'trainer.max_steps=1',
            `trainer.backend=${backend}`,
            `trainer.save_dir=${join(t.dir, backend)}`,
            ...more,
          ];
          const want = (
            await runPpo(loadConfig(ppoConfigSchema, { overrides: overrides('native', []) }), {
              stdout: { write: () => true } as unknown as NodeJS.WriteStream,
            })
          ).steps[0]!;
          // the actor's loss, entropy and norm, and the rollout's mean reward (same sampled tokens)
          const keys = ['actor/loss', 'actor/entropy', 'actor/grad_norm'];
          keys.push(...Object.keys(want).filter((k) => /reward.*mean/.test(k)));
          expect(keys.length).toBeGreaterThan(3);
          const ranks = await ppoOnRanks(2, overrides('webgpu', extra));
          expect(ranks.map((r) => r.rank)).toEqual([0, 1]);
          let worst = 0;
          for (const r of ranks) {
            expect(r.backend).toBe('webgpu');
            if (inPass) expect(r.blockingReads).toBeGreaterThan(0);
            for (const key of keys) {
              const [got, wanted] = [r.steps[0]![key] as number, want[key] as number];
              expectRelClose(got, wanted, `rank ${r.rank} ${key}`);
              worst = Math.max(worst, relDiff(got, wanted));
            }
          }
          console.log(
            `ppo ${extra.join(' ')} on 2 webgpu ranks: largest metric difference ${worst.toExponential(2)}`,
          );
          await tf.setBackend('cpu');
        } finally {
          rmSync(t.dir, { recursive: true, force: true });
        }
      },
      240_000,
    );
  },
);
