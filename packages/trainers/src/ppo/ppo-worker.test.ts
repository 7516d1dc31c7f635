import { join } from 'node:path';
import { initEngine } from '@rl2/engine';
import type { TrainingSequence } from '@rl2/rollout';
import * as tf from '@tensorflow/tfjs-core';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { QUIET_TRAINER, tinyRun } from '../../test/ppo-fixtures/tiny-run.js';
import { loadConfig } from '../config/load-config.js';
import { SINGLE_PROCESS } from '../parallel-model/data-parallel.js';
import { actorObjective } from './actor-objective.js';
import { criticObjective } from './critic-objective.js';
import { ppoConfigSchema } from './ppo-config.js';
import { type PpoModels, openPpoModels, ppoModelSections } from './ppo-models.js';

/** Six hand-made sequences: a 3-token prompt and a response of 2 to 5 tokens each. */
function sequences(): TrainingSequence[] {
  let x = 11;
  const token = () => {
    x = (x * 1103515245 + 12345) % 2147483648;
    return 3 + (x % 28);
  };
  return [2, 5, 3, 4, 2, 5].map((n, i) => {
    const ids = Array.from({ length: 3 + n }, token);
    const len = ids.length - 1;
    return {
      states: ids.slice(0, -1),
      actions: ids.slice(1),
      actionMask: Array.from({ length: len }, (_, t) => (t >= 2 ? 1 : 0)),
      eosMask: Array.from({ length: len }, (_, t) => (t === len - 1 ? 1 : 0)),
      positionIds: Array.from({ length: len }, (_, t) => t),
      llmLogps: new Array<number>(len).fill(0),
      rewards: Array.from({ length: len }, (_, t) => (t === len - 1 ? i % 2 : 0)),
      trajectoryId: i,
      promptId: Math.floor(i / 3),
    };
  });
}

const t = tinyRun('worker-dropout');
const opened: PpoModels[] = [];
beforeAll(() => initEngine({ backend: 'cpu', threads: 1, logger: () => {} }));
afterAll(() => {
  for (const m of opened) m.dispose();
});

/** Actor and critic with rank-4 adapters at `dropout`; lora_B and the score head set to the same nonzero values in every call. */
async function models(dropout: number): Promise<PpoModels> {
  const config = loadConfig(ppoConfigSchema, {
    overrides: [
      ...t.overrides(),
      ...QUIET_TRAINER,
      'adv.estimator=gae',
      'actor.lora.rank=4',
      'critic.lora.rank=4',
      `actor.lora.dropout=${dropout}`,
      `critic.lora.dropout=${dropout}`,
      `trainer.save_dir=${join(t.dir, 'run')}`,
    ],
  });
  const m = await openPpoModels(ppoModelSections(config), SINGLE_PROCESS, 4);
  opened.push(m);
  for (const w of [m.actor, m.critic!])
    for (const [name, v] of Object.entries(w.trained.params))
      if (name.includes('lora_B') || name.startsWith('score.'))
        tf.tidy(() => v.assign(tf.randomNormal(v.shape, 0, 0.5, 'float32', name.length)));
  return m;
}

/** One actor and one critic update on `seqs` against the old log-probs and values `old`. */
async function update(m: PpoModels, seqs: TrainingSequence[], old: number[][], values: number[][]) {
  const advantages = seqs.map((s) => s.actionMask.map((k, i) => k * (i % 3) - 0.5));
  const cfg = loadConfig(ppoConfigSchema, { overrides: [...t.overrides(), 'kl.coef=0'] });
  const actor = await m.actor.update(
    seqs,
    actorObjective(m.actor.trained.model, { sequences: seqs, advantages, oldLogps: old }, cfg),
    0,
  );
  const returns = values.map((r) => r.map((v) => v + 1));
  const critic = await m.critic!.update(
    seqs,
    criticObjective(m.critic!.trained.model, { oldValues: values, returns }, cfg.critic),
    0,
  );
  return { actor: actor.loss, critic: critic.loss, actorGradNorm: actor.gradNorm };
}

describe('PpoWorker with LoRA dropout (actor.lora.dropout, critic.lora.dropout)', () => {
  it('drops out in the update passes only: the log-prob and value passes are those without dropout', async () => {
    const seqs = sequences();
    const [on, again, off] = [await models(0.5), await models(0.5), await models(0)];
    const logps = await on.actor.computeLogps(seqs, 1);
    const values = await on.critic!.computeValues(seqs);
    expect(logps).toEqual(await off.actor.computeLogps(seqs, 1));
    expect(values).toEqual(await off.critic!.computeValues(seqs));

    const [a, b, c] = [
      await update(on, seqs, logps, values),
      await update(again, seqs, logps, values),
      await update(off, seqs, logps, values),
    ];
    expect(a).toEqual(b); // the masks are keyed (seed, optimizer step, tokens): reproducible
    expect(a.actor).not.toBe(c.actor); // the ratio against the dropout-free old log-probs is off 1
    expect(a.critic).not.toBe(c.critic);
    expect(a.actorGradNorm).not.toBe(c.actorGradNorm);

    // after the update the dropout key stays set: the passes still run without dropout
    for (const [w, from] of [
      [off.actor, on.actor],
      [off.critic!, on.critic!],
    ] as const)
      for (const [name, v] of Object.entries(w.trained.params))
        v.assign(from.trained.params[name]!);
    expect(await on.actor.computeLogps(seqs, 1)).toEqual(await off.actor.computeLogps(seqs, 1));
    expect(await on.critic!.computeValues(seqs)).toEqual(await off.critic!.computeValues(seqs));
  }, 60_000);
});
