import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { loadConfig } from '../src/config/load-config.js';
import type { MetricRecord } from '../src/metrics/metrics-log.js';
import { ppoConfigSchema } from '../src/ppo/ppo-config.js';
import { runPpo } from '../src/ppo/run-ppo.js';
import { tinyRun } from './ppo-fixtures/tiny-run.js';
import { ppoOnRanks, readSafetensors, relTensor } from './rank-runs.js';

const TOL = 1e-5;
/**
 * Relative error with a floor of 1e-2 on the scale: metrics that are differences of O(1)
 * float32 quantities (the GRPO loss, ~0 by symmetry at ratio 1; approxKl ~1e-3 after the first
 * of two updates, a difference of log-probs ~-3.5) have no 1e-5 relative digits in float32,
 * whatever the layout. The updated weights are compared at 1e-5 relative without a floor.
 */
const rel = (a: number, b: number) => Math.abs(a - b) / Math.max(Math.abs(b), 1e-2);
const timing = (k: string) =>
  k === 'step' || k === 'time' || k.startsWith('time/') || k.startsWith('tokens_per_s/');

function expectSameStep(got: Record<string, number>, want: MetricRecord, label: string) {
  const keys = Object.keys(want).filter((k) => !timing(k));
  expect(
    Object.keys(got)
      .filter((k) => !timing(k))
      .sort(),
    label,
  ).toEqual(keys.sort());
  for (const k of keys)
    expect(
      rel(got[k] as number, want[k] as number),
      `${label} ${k}: ${got[k]} vs ${want[k]}`,
    ).toBeLessThan(TOL);
}

function expectSameWeights(
  file: string,
  want: string,
  initial: string,
  label: string,
  mustMove = true,
) {
  const got = readSafetensors(file);
  const ref = readSafetensors(want);
  const start = readSafetensors(initial);
  expect([...got.keys()].sort(), label).toEqual([...ref.keys()].sort());
  let moved = 0;
  for (const [name, b] of ref) {
    expect(relTensor(got.get(name) as Float32Array, b), `${label} ${name}`).toBeLessThan(TOL);
    const s = start.get(name);
    if (s && s.length === b.length) moved = Math.max(moved, relTensor(b, s));
  }
  if (mustMove) expect(moved, `${label}: the step must change the weights`).toBeGreaterThan(1e-4);
}

function caseOverrides(t: ReturnType<typeof tinyRun>, saveDir: string, extra: string[]): string[] {
  return [
    ...t.overrides(),
    'rollout.train_prompts_per_rollout=4',
    'rollout.responses_per_prompt=4',
    'rollout.train_sampling_params.max_new_tokens=4',
    'rollout.dynamic_filtering=false',
    'rollout.save_rollouts=false',
    'actor.lr=1e-2',
    'actor.warmup_ratio=0',
    'actor.max_length_per_device=24',
    'trainer.max_steps=1',
    'trainer.test_freq=null',
    `trainer.save_dir=${saveDir}`,
    'trainer.progress=lines',
    'trainer.threads=1',
    'trainer.use_tensorboard=false',
    'trainer.report=false',
    ...extra,
  ];
}

async function singleProcess(overrides: string[]): Promise<MetricRecord> {
  const res = await runPpo(loadConfig(ppoConfigSchema, { overrides }), {
    stdout: { write: () => true } as unknown as NodeJS.WriteStream,
  });
  return res.steps[0] as MetricRecord;
}

describe('one PPO step on 2 processes equals the one-process step', () => {
  it('GRPO, data parallel and FSDP(2) (actor.ddp_size=1): loss, reward metrics and updated weights within 1e-5', async () => {
    const t = tinyRun('grpo-dp');
    const extra = ['adv.estimator=grpo'];
    const want = await singleProcess(caseOverrides(t, join(t.dir, 'single'), extra));
    expect(want['actor/loss']).toBeDefined();
    for (const [label, layout] of [
      ['dp', ['rollout.save_rollouts=true']],
      ['fsdp', ['actor.ddp_size=1']],
      // refill ties a step's prompts to completion order: every rank rolls out the whole step (checked equal)
      ['replicated', ['rollout.refill=true']],
    ] as const) {
      const saveDir = join(t.dir, label);
      const results = await ppoOnRanks(2, caseOverrides(t, saveDir, [...extra, ...layout]));
      expect(results.map((r) => r.rank)).toEqual([0, 1]);
      for (const r of results) {
        expect(r.steps).toHaveLength(1);
        expectSameStep(r.steps[0] as Record<string, number>, want, `${label} rank ${r.rank}`);
      }
      expectSameWeights(
        join(saveDir, 'step-1/model/model.safetensors'),
        join(t.dir, 'single/step-1/model/model.safetensors'),
        join(t.model, 'model.safetensors'),
        label,
      );
      if (label === 'dp') {
        // the rollout was sharded: each rank sampled its 2 prompts x 4 responses
        for (const rank of [0, 1]) {
          const lines = readFileSync(
            join(saveDir, 'rollouts', `rank-${rank}`, 'step-1.jsonl'),
            'utf8',
          )
            .split('\n')
            .filter(Boolean);
          expect(lines, `rank ${rank} rollouts`).toHaveLength(8);
        }
      }
    }
  }, 90_000);

  it('GAE with a critic, the KL in the reward and 2 updates per rollout, FSDP(2) for actor and ' +
    'critic: the same metrics and actor/critic weights', async () => {
    const t = tinyRun('gae-dp');
    const extra = [
      'adv.estimator=gae',
      'kl.type=reward',
      'kl.coef=0.01',
      'actor.update_per_rollout=2',
      'critic.lr=1e-2',
      'critic.warmup_ratio=0',
    ];
    const want = await singleProcess(caseOverrides(t, join(t.dir, 'single'), extra));
    expect(want['critic/loss']).toBeDefined();
    const saveDir = join(t.dir, 'fsdp');
    const results = await ppoOnRanks(
      2,
      caseOverrides(t, saveDir, [...extra, 'actor.ddp_size=1', 'critic.ddp_size=1']),
    );
    expect(results.map((r) => r.rank)).toEqual([0, 1]);
    for (const r of results)
      expectSameStep(r.steps[0] as Record<string, number>, want, `gae rank ${r.rank}`);
    expectSameWeights(
      join(saveDir, 'step-1/model/model.safetensors'),
      join(t.dir, 'single/step-1/model/model.safetensors'),
      join(t.model, 'model.safetensors'),
      'gae actor',
    );
    expectSameWeights(
      join(saveDir, 'step-1/critic/model.safetensors'),
      join(t.dir, 'single/step-1/critic/model.safetensors'),
      join(t.model, 'model.safetensors'),
      'gae critic',
    );
  }, 90_000);

  it('GAE with the KL in the reward and 2 updates per rollout, actor and critic under TP / CP / ' +
    'FSDP (the actor tp group generates with its shards), two steps: the same metrics and weights', async () => {
    // 4 query / 2 kv heads and 34 embedding rows, so tp = 2 divides them
    const t = tinyRun('gae-tp', { heads: 4, kvHeads: 2, vocabSize: 34 });
    // AdamW eps 1e-6: entries with |g| near eps (1e-8 by default) turn float32 rounding of the
    // gradient into update differences of up to lr * noise / eps (see model-parallel.test.ts)
    const extra = [
      'adv.estimator=gae',
      'kl.type=reward',
      'kl.coef=0.01',
      'actor.update_per_rollout=2',
      'critic.lr=1e-2',
      'critic.warmup_ratio=0',
      'trainer.max_steps=2',
      'actor.eps=1e-6',
      'critic.eps=1e-6',
    ];
    const single = await runPpo(
      loadConfig(ppoConfigSchema, { overrides: caseOverrides(t, join(t.dir, 'single'), extra) }),
      { stdout: { write: () => true } as unknown as NodeJS.WriteStream },
    );
    expect(single.steps).toHaveLength(2);
    for (const [label, n, layout] of [
      ['actor TP(2), critic CP(2)', 2, ['actor.tp_size=2', 'critic.cp_size=2']],
      [
        'actor TP(2) x CP(2), critic TP(2) x FSDP(2)',
        4,
        ['actor.tp_size=2', 'actor.cp_size=2', 'critic.tp_size=2', 'critic.ddp_size=1'],
      ],
    ] as const) {
      const saveDir = join(t.dir, label.replace(/\W+/g, '-'));
      const results = await ppoOnRanks(n, caseOverrides(t, saveDir, [...extra, ...layout]));
      expect(results.map((r) => r.rank)).toEqual(Array.from({ length: n }, (_, i) => i));
      for (const r of results) {
        expect(r.steps).toHaveLength(2);
        // step 2's rollout samples from the actor updated (as shards) in step 1
        r.steps.forEach((s, i) => {
          expectSameStep(
            s,
            single.steps[i] as MetricRecord,
            `${label} rank ${r.rank} step ${i + 1}`,
          );
        });
      }
      expectSameWeights(
        join(saveDir, 'step-2/model/model.safetensors'),
        join(t.dir, 'single/step-2/model/model.safetensors'),
        join(t.model, 'model.safetensors'),
        `${label}: actor`,
      );
      expectSameWeights(
        join(saveDir, 'step-2/critic/model.safetensors'),
        join(t.dir, 'single/step-2/critic/model.safetensors'),
        join(t.model, 'model.safetensors'),
        `${label}: critic`,
      );
    }
  }, 120_000);

  it('GAE with LoRA on actor and critic (the reference is the base), actor FSDP(2), critic ' +
    'TP(2): the same metrics, PEFT adapters and merged weights', async () => {
    // the engine generates from the full copy with the gathered adapters; the critic's adapters
    // split over tp (actor TP(2), its tp group generating with the adapter shards, passed alike by hand)
    const t = tinyRun('lora-tp', { heads: 4, kvHeads: 2, vocabSize: 34 });
    const extra = [
      'adv.estimator=gae',
      'kl.type=reward',
      'kl.coef=0.01',
      'critic.lr=1e-2',
      'critic.warmup_ratio=0',
      // AdamW's first step moves B (zero at the start) by lr * g / (|g| + eps): with eps 1e-6 an
      // o_proj entry with |g| near eps turned float32 noise into 4e-5 relative (see model-parallel.test.ts)
      'actor.eps=1e-4',
      'critic.eps=1e-4',
      ...['actor', 'critic'].flatMap((k) => [`${k}.lora.rank=4`, `${k}.lora.save_merged=true`]),
    ];
    const want = await singleProcess(caseOverrides(t, join(t.dir, 'single'), extra));
    const saveDir = join(t.dir, 'fsdp-tp');
    const results = await ppoOnRanks(
      2,
      caseOverrides(t, saveDir, [...extra, 'actor.ddp_size=1', 'critic.tp_size=2']),
    );
    expect(results.map((r) => r.rank)).toEqual([0, 1]);
    for (const r of results)
      expectSameStep(r.steps[0] as Record<string, number>, want, `lora rank ${r.rank}`);
    for (const [adapter, merged] of [
      ['adapter', 'model'],
      ['critic_adapter', 'critic'],
    ] as const) {
      const peft = `step-1/${adapter}/adapter_model.safetensors`;
      expectSameWeights(
        join(saveDir, peft),
        join(t.dir, 'single', peft),
        join(t.dir, 'single', peft),
        adapter,
        false,
      );
      expectSameWeights(
        join(saveDir, `step-1/${merged}/model.safetensors`),
        join(t.dir, `single/step-1/${merged}/model.safetensors`),
        join(t.model, 'model.safetensors'),
        `merged ${merged}`,
        // the critic's new score head is zeros: its adapters get no gradient in the first step
        merged === 'model',
      );
    }
  }, 90_000);

  it('ZeRO-3 actor frozen for the only step (no optimizer moments yet): the checkpoint is written with the starting weights', async () => {
    const t = tinyRun('zero3-frozen');
    const saveDir = join(t.dir, 'frozen');
    const results = await ppoOnRanks(
      2,
      caseOverrides(t, saveDir, ['adv.estimator=grpo', 'actor.ddp_size=1', 'actor.freeze_steps=1']),
    );
    expect(results.map((r) => r.rank)).toEqual([0, 1]);
    const saved = readSafetensors(join(saveDir, 'step-1/model/model.safetensors'));
    for (const [name, w] of readSafetensors(join(t.model, 'model.safetensors')))
      expect(relTensor(saved.get(name), w), name).toBe(0);
  }, 60_000);
});
