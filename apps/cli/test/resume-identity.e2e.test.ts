import { readFileSync, realpathSync, rmSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { EXAMPLE_TOKENIZER, QUIET_RUN, initTinyModel, rl2, tmp, writeTinyData } from './helpers.js';

// Resuming with another model_name used to train the checkpoint's model silently, while
// config.yaml named the model that was not trained. The checkpoint's config.json now records the
// model its run started from, and a resume with another one (width, seed) fails naming both.
let dir: string;
let model: string;
let wide: string;
let reseeded: string;
let data: ReturnType<typeof writeTinyData>;

async function initModel(out: string, flags: string[]) {
  const r = await rl2(['init-model', '--tokenizer', EXAMPLE_TOKENIZER, '--out', out, ...flags]);
  if (r.code !== 0) throw new Error(r.stderr);
}

beforeAll(async () => {
  dir = realpathSync(tmp('identity'));
  model = join(dir, 'model');
  wide = join(dir, 'wide');
  reseeded = join(dir, 'seed-1');
  data = writeTinyData(dir);
  await initTinyModel(model);
  await initModel(wide, ['--hidden-size', '32', '--layers', '1', '--heads', '2']);
  await initModel(reseeded, [
    '--hidden-size',
    '16',
    '--layers',
    '1',
    '--heads',
    '2',
    '--seed',
    '1',
  ]);
  writeFileSync(
    join(dir, 'prompts.jsonl'),
    `${JSON.stringify({ messages: [{ role: 'user', content: '1+2=' }], answer: 3 })}\n`,
  );
  writeFileSync(join(dir, 'env.mjs'), 'export async function step() { return [null, 1, true]; }\n');
});
afterAll(() => rmSync(dir, { recursive: true, force: true }));

const run = (kind: 'sft' | 'rm' | 'ppo', saveDir: string, name: string, extra: string[] = []) => {
  const common = [`trainer.save_dir=${saveDir}`, 'trainer.backend=cpu', ...QUIET_RUN, ...extra];
  if (kind === 'ppo')
    return rl2([
      'ppo',
      `actor.model_name=${name}`,
      `data.train.path=${join(dir, 'prompts.jsonl')}`,
      `data.test.path=${join(dir, 'prompts.jsonl')}`,
      `rollout.env_path=${join(dir, 'env.mjs')}`,
      'rollout.train_prompts_per_rollout=1',
      'rollout.responses_per_prompt=2',
      'rollout.train_sampling_params.max_new_tokens=2',
      'trainer.test_freq=null',
      ...common,
    ]);
  const [key, train, test] =
    kind === 'sft'
      ? ['actor', data.sftTrain, data.sftTest]
      : ['critic', data.pairTrain, data.pairTest];
  return rl2([
    kind,
    `${key}.model_name=${name}`,
    `data.train.path=${train}`,
    `data.test.path=${test}`,
    'data.train.batch_size=4',
    ...common,
  ]);
};
const RESUME = ['trainer.load_ckpt_from=latest', 'trainer.max_steps=2'];

describe.each([
  ['sft', 'actor'],
  ['rm', 'critic'],
  ['ppo', 'actor'],
] as const)('rl2 %s resumed with another model', (kind, key) => {
  it('fails naming the checkpoint, both models and the key to change; the same model resumes', async () => {
    const saveDir = join(dir, `${kind}-run`);
    const first = await run(kind, saveDir, model, ['trainer.max_steps=1']);
    expect(first.code, first.stderr).toBe(0);
    const saved = join(realpathSync(join(saveDir, 'latest')), 'model');
    expect(JSON.parse(readFileSync(join(saved, 'config.json'), 'utf8'))._name_or_path).toBe(model);
    const config = readFileSync(join(saveDir, 'config.yaml'), 'utf8');

    const other = await run(kind, saveDir, wide, RESUME);
    expect(other.code).toBe(1);
    expect(other.stderr).toContain(
      `rl2: trainer.load_ckpt_from: the checkpoint ${join(saveDir, 'step-1', 'model')} was trained from ${key}.model_name=${model}, ` +
        `but ${key}.model_name=${wide} (hidden_size 16 in the checkpoint, 32 requested`,
    );
    expect(other.stderr).toContain(`To resume that run set ${key}.model_name=${model}`);
    const seed = await run(kind, saveDir, reseeded, RESUME);
    expect(seed.code).toBe(1);
    expect(seed.stderr).toContain(`but ${key}.model_name=${reseeded}. To resume that run`);
    expect(readFileSync(join(saveDir, 'config.yaml'), 'utf8')).toBe(config); // untouched

    const same = await run(kind, saveDir, `${dir}/./model/`, RESUME);
    expect(same.code, same.stderr).toBe(0);
    expect(same.stdout).toContain('resuming from');
  }, 120_000);
});
