import { rmSync } from 'node:fs';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { metricRecords, rl2, tinyPpoRun } from './helpers.js';

/** Rewards the share of digits in the reply: the responses of a group differ. */
const DIGITS = `export async function step(state, action) {
  const chars = [...action.replace('<|im_end|>', '')];
  return [null, chars.length ? chars.filter((c) => c >= '0' && c <= '9').length / chars.length : 0, true];
}
`;

let tiny: Awaited<ReturnType<typeof tinyPpoRun>>;
let dir: string;
beforeAll(async () => {
  // 5 prompts at 2 per step: 2 steps per epoch, one prompt left out of each
  tiny = await tinyPpoRun('ppo-loop', ['1+2=', '3+4=', '5+6=', '7+8=', '9+1=']);
  dir = tiny.dir;
});
afterAll(() => rmSync(dir, { recursive: true, force: true }));

const env = (name: string, source: string) => tiny.env(name, source);
const ppo = (saveDir: string, envFile: string, extra: string[] = []) =>
  tiny.args(saveDir, envFile, 2, extra);
const testSteps = (saveDir: string) =>
  metricRecords(saveDir)
    .filter((r) => r['test/reward/mean'] !== undefined)
    .map((r) => r.step);

describe('rl2 ppo: every group filtered out (it used to print loss 0 and exit 0 without a word)', () => {
  it('warns at each such step with the count and the reason, and stops past rollout.max_filtered_steps naming the filter keys', async () => {
    const constant = env(
      'constant.mjs',
      'export async function step() { return [null, 1, true]; }\n',
    );
    const saveDir = join(dir, 'filtered');
    const r = await rl2(ppo(saveDir, constant, ['rollout.max_filtered_steps=2']));
    expect(r.code, r.stdout).toBe(1);
    for (const k of [1, 2])
      expect(r.stdout).toContain(
        `rollout step ${k}: all 2 groups filtered out (rollout.dynamic_filtering=true drops a group ` +
          `whose rewards are all equal (its advantages are 0)), nothing to train on: ${k} of ` +
          'rollout.max_filtered_steps=2 such steps in a row tolerated',
      );
    expect(r.stderr).toMatch(/rollout step 3: all 2 groups filtered out .*nothing to train on\. /);
    expect(r.stderr).toContain(
      '3 steps in a row without a group to train on, more than rollout.max_filtered_steps=2: stopping',
    );
    expect(r.stderr).toContain('rollout.dynamic_filtering=false');
  });

  it('says once at the start how many prompts per epoch full steps leave out (as RL2 drop_last)', async () => {
    const r = await rl2(
      ppo(join(dir, 'left-out'), env('digits.mjs', DIGITS), ['trainer.max_steps=1']),
    );
    expect(r.code, r.stderr).toBe(0);
    // a 1-step run ends before its first epoch does: nothing to say
    expect(r.stdout).not.toContain('not trained on');
    const full = await rl2(ppo(join(dir, 'left-out-2'), env('digits.mjs', DIGITS)));
    expect(full.code, full.stderr).toBe(0);
    const line =
      '2 steps per epoch of rollout.train_prompts_per_rollout=2 take 4 of the 5 prompts: 1 per ' +
      "epoch are not trained on (as RL2's dataloader drops its last partial batch)";
    expect(full.stdout.split(line)).toHaveLength(2);
  });
});

describe('rl2 ppo evaluates as its --help says (RL2: every trainer.test_freq steps, no epoch validation)', () => {
  it('--help describes test_freq and val_before_train for ppo; runs evaluate before the first step, every N steps and at the end, or never', async () => {
    const help = await rl2(['ppo', '--help']);
    expect(help.stdout).toContain('evaluate on the test prompts every N steps and after the last');
    expect(help.stdout).not.toContain('validation always runs after each epoch');
    const digits = env('digits.mjs', DIGITS);
    const every = join(dir, 'every');
    expect((await rl2(ppo(every, digits, ['trainer.test_freq=3']))).code).toBe(0);
    expect(testSteps(every)).toEqual([0, 3, 4]);
    const noBefore = join(dir, 'no-before');
    const r = await rl2(
      ppo(noBefore, digits, ['trainer.test_freq=2', 'trainer.val_before_train=false']),
    );
    expect(r.code, r.stderr).toBe(0);
    expect(testSteps(noBefore)).toEqual([2, 4]);
    const never = join(dir, 'never');
    expect((await rl2(ppo(never, digits))).code).toBe(0);
    expect(testSteps(never)).toEqual([]);
  });
});
