import { existsSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { beforeAll, describe, expect, it } from 'vitest';
import { initTinyModel, metricRecords, rl2, tmp } from './helpers.js';

let dir: string;
let model: string;

/** {messages, answer} prompts and an env rewarding the share of digits in the reply. */
beforeAll(async () => {
  dir = tmp('ppo');
  model = join(dir, 'model');
  await initTinyModel(model);
  const rows = (qs: string[]) =>
    `${qs.map((q) => JSON.stringify({ messages: [{ role: 'user', content: q }], answer: 0 })).join('\n')}\n`;
  writeFileSync(
    join(dir, 'train.jsonl'),
    rows(['1+2=', '3+4=', '5+6=', '7+8=', '9+1=', '2+2=', '4+4=', '6+6=']),
  );
  writeFileSync(join(dir, 'test.jsonl'), rows(['8+1=', '2+7=']));
  writeFileSync(
    join(dir, 'env.mjs'),
    `export async function step(state, action) {
  const chars = [...action.replace('<|im_end|>', '')];
  return [null, chars.length ? chars.filter((c) => c >= '0' && c <= '9').length / chars.length : 0, true];
}
`,
  );
});

const args = (saveDir: string, extra: string[] = []) => [
  'ppo',
  `actor.model_name=${model}`,
  `data.train.path=${join(dir, 'train.jsonl')}`,
  `data.test.path=${join(dir, 'test.jsonl')}`,
  `rollout.env_path=${join(dir, 'env.mjs')}`,
  'rollout.train_prompts_per_rollout=4',
  'rollout.responses_per_prompt=4',
  'rollout.train_sampling_params.max_new_tokens=4',
  'actor.lr=3e-2',
  'trainer.n_epochs=2',
  'trainer.max_steps=3',
  'trainer.test_freq=3',
  `trainer.save_dir=${saveDir}`,
  'trainer.progress=lines',
  'trainer.threads=1',
  ...extra,
];

describe('rl2 ppo end to end', () => {
  it('runs GRPO steps, evaluates before and after, writes metrics, rollouts, a checkpoint and the report', async () => {
    const saveDir = tmp('ppo-run');
    const r = await rl2(args(saveDir));
    expect(r.code, r.stderr).toBe(0);
    expect(r.stdout).toMatch(/evaluation @ step 0: reward/);
    expect(r.stdout).toMatch(/done: 3 steps, test reward \d\.\d{4} -> \d\.\d{4}, checkpoint/);
    const records = metricRecords(saveDir);
    expect(records.filter((x) => x['train/reward/mean'] !== undefined).map((x) => x.step)).toEqual([
      1, 2, 3,
    ]);
    expect(records.filter((x) => x['test/reward/mean'] !== undefined).map((x) => x.step)).toEqual([
      0, 3,
    ]);
    for (const f of [
      'step-3/model/model.safetensors',
      'step-3/model/tokenizer.json',
      'step-3/trainer_state.json',
      'rollouts/step-1.jsonl',
      'rollouts/eval-step-3.jsonl',
      'report.html',
    ]) {
      expect(existsSync(join(saveDir, f)), f).toBe(true);
    }
  });

  it('--dry-run prints the resolved config; --help lists the tree; a bad key names the closest one', async () => {
    const dry = await rl2([...args(tmp('ppo-dry')), 'kl.type=loss', '--dry-run']);
    expect(dry.code, dry.stderr).toBe(0);
    expect(dry.stdout).toMatch(/kl:\n {2}coef: 0\n {2}type: loss/);
    const help = await rl2(['ppo', '--help']);
    expect(help.stdout).toContain('rollout.responses_per_prompt');
    expect(help.stdout).toContain('adv.estimator');
    const bad = await rl2([...args(tmp('ppo-bad')), 'rollout.response_per_prompt=4']);
    expect(bad.code).toBe(1);
    expect(bad.stderr).toContain('did you mean "rollout.responses_per_prompt"');
  });
});

describe('rl2 serve + rl2 ppo over the SGLang client', () => {
  it('trains against a served checkpoint; a server that is down is a clear error', async () => {
    const controller = new AbortController();
    let url = '';
    let ready!: () => void;
    const started = new Promise<void>((resolve) => {
      ready = resolve;
    });
    const serving = rl2(['serve', '--model', model, '--port', '0', '--threads', '1'], {
      signal: controller.signal,
      onStdout: (text) => {
        const m = /ready: (http:\/\/\S+)/.exec(text);
        if (m) {
          url = m[1];
          ready();
        }
      },
    });
    await Promise.race([
      started,
      serving.then((r) => Promise.reject(new Error(`rl2 serve exited: ${r.stderr}`))),
    ]);
    expect(url).toMatch(/^http:\/\/127\.0\.0\.1:\d+$/);
    const saveDir = tmp('ppo-sglang');
    const r = await rl2(
      args(saveDir, [
        'rollout.engine=sglang',
        `rollout.server_urls=["${url}"]`,
        'trainer.max_steps=2',
        'trainer.test_freq=null',
      ]),
    );
    expect(r.code, r.stderr).toBe(0);
    expect(
      existsSync(join(saveDir, 'weights', 'model.safetensors')),
      'weights pushed for /update_weights_from_disk',
    ).toBe(true);
    controller.abort();
    const served = await serving;
    expect(served.code, served.stderr).toBe(0);
    expect(served.stdout).toContain('stopped');

    const down = await rl2(
      args(tmp('ppo-down'), ['rollout.engine=sglang', `rollout.server_urls=["${url}"]`]),
    );
    expect(down.code).toBe(1);
    expect(down.stderr).toContain('rollout.server_urls: no healthy SGLang server');
    expect(down.stderr).toContain(url);
  });
});
