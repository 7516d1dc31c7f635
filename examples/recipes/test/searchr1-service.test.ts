import { rmSync } from 'node:fs';
import { join } from 'node:path';
import { loadTokenizer } from '@rl2/data';
import { type SGLangServer, startSGLangServer } from '@rl2/rollout';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { type SearchService, startSearchService } from '../searchr1/search-service.js';
import {
  QUIET,
  addTokenizer,
  metrics,
  recipes,
  rl2,
  rollouts,
  root,
  tinyModel,
  tmp,
} from './run-recipe.js';
import { scriptedSearcher } from './scripted-searcher.js';

/**
 * The Search-R1 recipe end to end against its search service: rollouts come from an engine
 * that searches and answers (behind rl2's SGLang-compatible server, rollout.engine=sglang), the
 * env posts to a live BM25 service on 127.0.0.1, then to one that is down.
 */
let dir: string;
let model: string;
let engine: SGLangServer;
const cwd = process.cwd();
const savedUrl = process.env.RL2_SEARCH_URL;

beforeAll(async () => {
  process.chdir(root);
  dir = tmp('search');
  model = await tinyModel(dir);
  engine = await startSGLangServer(scriptedSearcher(await loadTokenizer(addTokenizer)), {
    port: 0,
  });
});
afterAll(async () => {
  await engine.close();
  process.chdir(cwd);
  if (savedUrl === undefined) delete process.env.RL2_SEARCH_URL;
  else process.env.RL2_SEARCH_URL = savedUrl;
  rmSync(dir, { recursive: true, force: true });
});

const run = (saveDir: string, extra: string[] = []) =>
  rl2([
    'ppo',
    '--config',
    join(recipes, 'searchr1', 'searchr1.yaml'),
    `data.train.path=${join(recipes, 'searchr1', 'data', 'standin-train.jsonl')}`,
    `data.test.path=${join(recipes, 'searchr1', 'data', 'standin-test.jsonl')}`,
    'rollout.engine=sglang',
    `rollout.server_urls=["${engine.url}"]`,
    'rollout.train_prompts_per_rollout=2',
    'rollout.test_prompts_per_rollout=2',
    'rollout.responses_per_prompt=2',
    'rollout.train_sampling_params.max_new_tokens=64',
    `actor.model_name=${model}`,
    'actor.max_length_per_device=2048',
    'trainer.max_steps=2',
    'trainer.val_before_train=false',
    `trainer.save_dir=${saveDir}`,
    ...QUIET,
    ...extra,
  ]);

describe('searchr1 recipe against its search service', () => {
  it('searches a live service, reads the passages and scores the answers by exact match', async () => {
    const service: SearchService = await startSearchService({
      corpusPath: join(recipes, 'searchr1', 'data', 'corpus.jsonl'),
      topK: 3,
      port: 0,
    });
    process.env.RL2_SEARCH_URL = `${service.url}/search`;
    try {
      const saveDir = join(dir, 'live');
      const r = await run(saveDir);
      expect(r.code, r.stderr).toBe(0);
      const steps = metrics(saveDir).filter((m) => m['train/reward/mean'] !== undefined);
      expect(steps.map((m) => m.step)).toEqual([1, 2]);
      expect(steps.some((m) => (m['train/reward/mean'] ?? 0) > 0)).toBe(true);
      expect(steps.every((m) => m['train/turns/mean'] === 2 && m['train/failures'] === 0)).toBe(
        true,
      );
      const records = rollouts(saveDir, 1) as { sequences: unknown[]; turns: unknown[] }[];
      // search, then answer: state + action is a prefix of the next state, so one sequence
      expect(records.map((t) => [t.turns.length, t.sequences.length])).toEqual(
        records.map(() => [2, 1]),
      );
      const rows = JSON.stringify(records);
      expect(rows).toMatch(/<information>Doc 1\(Title: /);
      expect(rows).toMatch(/<\/answer>/);
    } finally {
      await service.close();
    }
  });

  it('a service that is down fails every sample; the run goes on within rollout.max_failed_steps', async () => {
    const gone = await startSearchService({
      corpusPath: join(recipes, 'searchr1', 'data', 'corpus.jsonl'),
      port: 0,
    });
    await gone.close();
    process.env.RL2_SEARCH_URL = `${gone.url}/search`;
    const saveDir = join(dir, 'down');
    const r = await run(saveDir); // searchr1.yaml: rollout.max_failed_steps=2
    expect(r.code, r.stderr).toBe(0);
    expect(r.stdout + r.stderr).toMatch(/cannot be reached \(ECONNREFUSED\)/);
    expect(r.stdout + r.stderr).toMatch(
      /2 of rollout.max_failed_steps=2 such steps in a row tolerated/,
    );
    const steps = metrics(saveDir).filter((m) => m['train/samples'] !== undefined);
    expect(steps.map((m) => [m.step, m['train/failures'] === m['train/samples']])).toEqual([
      [1, true],
      [2, true],
    ]);

    const stopped = await run(join(dir, 'down-0'), ['rollout.max_failed_steps=0']);
    expect(stopped.code).toBe(1);
    expect(stopped.stderr).toMatch(/more than rollout.max_failed_steps=0: stopping/);
    expect(stopped.stderr).toMatch(
      /search service http:\/\/127\.0\.0\.1:\d+\/search cannot be reached/,
    );
  });
});
