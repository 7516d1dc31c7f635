import { join } from 'node:path';
import { Writable } from 'node:stream';
import { type DpoOptions, dpoLoss } from '@rl2/algos';
import { initEngine } from '@rl2/engine';
import { type DecoderModel, loadModel, tokenLogprobs } from '@rl2/models';
import * as tf from '@tensorflow/tfjs-core';
import { tempDir } from '@rl2/vitest-config/temp-dir';
import { beforeAll, describe, expect, it } from 'vitest';
import type { TrainingSequence } from '../src/dataset/training-item.js';
import { loadItems } from '../src/dataset/load-items.js';
import { runDpo } from '../src/dpo/run-dpo.js';
import { writeRandomCheckpoint } from '../src/model-init/random-checkpoint.js';
import { openTokenizer } from '../src/run/run-setup.js';
import { CHAR_TOKENIZER, caseConfig, writeTrainCase } from './train-case.js';

const PAIRS = 8;
const BETA = 0.5;
let dir: string;
let refDir: string;
let runs = 0;
/** Per pair: summed log-probs and action-token counts of the chosen and rejected replies. */
let pairs: { policy: [number, number]; ref: [number, number]; lengths: [number, number] }[];

const quiet = {
  stdout: new Writable({ write: (_c, _e, cb) => cb() }) as unknown as NodeJS.WriteStream,
};

/** The step-1 train loss of `rl2 dpo` on all 8 pairs at once under `overrides`. */
async function stepLoss(overrides: string[]): Promise<number> {
  runs += 1;
  const config = caseConfig('dpo', dir, join(dir, `run-${runs}`), [
    'trainer.max_steps=1',
    `data.train.batch_size=${PAIRS}`,
    `actor.beta=${BETA}`,
    `ref_actor.model_name=${refDir}`,
    ...overrides,
  ]);
  const res = await runDpo(config, quiet);
  return res.trainLoss.get(1) as number;
}

/** dpoLoss of `options` on the fixture pairs (the reference computation). */
function reference(options: DpoOptions): number {
  return tf.tidy(() => {
    const col = (pick: (p: (typeof pairs)[number]) => number) => tf.tensor1d(pairs.map(pick));
    const res = dpoLoss(
      {
        chosenLogps: col((p) => p.policy[0]),
        rejectedLogps: col((p) => p.policy[1]),
        refChosenLogps: col((p) => p.ref[0]),
        refRejectedLogps: col((p) => p.ref[1]),
        chosenLengths: col((p) => p.lengths[0]),
        rejectedLengths: col((p) => p.lengths[1]),
      },
      { beta: BETA, ...options },
    );
    return res.loss.dataSync()[0];
  });
}

/** Sum of log pi(target) over the loss-masked tokens of one sequence, in a pass of its own. */
function sequenceLogp(model: DecoderModel, s: TrainingSequence): number {
  return tf.tidy(() => {
    const { logprobs } = tokenLogprobs(
      model,
      { inputIds: s.inputIds, positionIds: s.positionIds },
      s.targets,
    );
    return tf.sum(tf.mul(logprobs, tf.tensor1d([...s.lossMask], 'float32'))).dataSync()[0];
  });
}

beforeAll(async () => {
  await initEngine({ backend: 'cpu', threads: 1, logger: () => {} });
  dir = tempDir('rl2-dpo-keys-');
  writeTrainCase(dir, { rows: PAIRS });
  // a reference that differs from the policy, so the implicit rewards (and cDPO's smoothing) are not 0
  refDir = join(dir, 'ref');
  writeRandomCheckpoint({
    arch: 'qwen3',
    tokenizerDir: CHAR_TOKENIZER,
    outDir: refDir,
    hiddenSize: 16,
    numLayers: 1,
    numHeads: 2,
    tieWordEmbeddings: true,
    seed: 9,
  });
  const config = caseConfig('dpo', dir, join(dir, 'unused'));
  const tokenizer = await openTokenizer(join(dir, 'model'), 'actor.model_name');
  const { train } = await loadItems('dpo', tokenizer, config.data, config.trainer.seed);
  expect(train).toHaveLength(PAIRS);
  const policy = (await loadModel(join(dir, 'model'))).model;
  const ref = (await loadModel(refDir)).model;
  pairs = train.map((item) => {
    const [c, r] = item.sequences;
    const count = (s: TrainingSequence) => s.lossMask.reduce((a, m) => a + m, 0);
    return {
      policy: [sequenceLogp(policy, c), sequenceLogp(policy, r)],
      ref: [sequenceLogp(ref, c), sequenceLogp(ref, r)],
      lengths: [count(c), count(r)],
    };
  });
}, 60_000);

describe('rl2 dpo: actor.preference_loss, actor.label_smoothing, actor.simpo_gamma, actor.nll_coef reach the loss', () => {
  let dpo: number;
  beforeAll(async () => {
    dpo = await stepLoss([]);
  }, 30_000);

  it('dpo (default): -logsigmoid(beta * margin of log-ratios), the rewards not all 0', () => {
    expect(dpo).toBeCloseTo(reference({}), 5);
    expect(Math.abs(dpo - Math.log(2))).toBeGreaterThan(1e-3);
  });

  it.each([
    ['IPO', ['actor.preference_loss=ipo'], { variant: 'ipo' }],
    ['cDPO', ['actor.label_smoothing=0.2'], { labelSmoothing: 0.2 }],
    ['SimPO (gamma 0.5 beta)', ['actor.preference_loss=simpo'], { variant: 'simpo' }],
    [
      'SimPO (simpo_gamma=1)',
      ['actor.preference_loss=simpo', 'actor.simpo_gamma=1'],
      { variant: 'simpo', simpoGamma: 1 },
    ],
    ['RPO (nll_coef)', ['actor.nll_coef=0.3'], { nllCoef: 0.3 }],
  ] as [string, string[], DpoOptions][])(
    '%s',
    async (_name, overrides, options) => {
      const got = await stepLoss(overrides);
      const want = reference(options);
      expect(got).toBeCloseTo(want, 5);
      // the option moved the loss away from plain DPO's
      expect(Math.abs(want - dpo)).toBeGreaterThan(1e-3);
    },
    30_000,
  );
});
