import { existsSync } from 'node:fs';
import { join } from 'node:path';
import { Writable } from 'node:stream';
import { createSGLangEngine, serveModel } from '@rl2/rollout';
import { describe, expect, it } from 'vitest';
import { loadConfig } from '../config/load-config.js';
import { ppoConfigSchema } from './ppo-config.js';
import { runPpo } from './run-ppo.js';
import { QUIET_TRAINER, tinyRun } from '../../test/ppo-fixtures/tiny-run.js';

const quiet = () => new Writable({ write: (_c, _e, cb) => cb() }) as unknown as NodeJS.WriteStream;

describe('runPpo over SGLang against serveModel', () => {
  it('PPO rolls out through the SGLang client (API key from RL2_API_KEY), pushing weights after each update', async () => {
    const t = tinyRun('sglang');
    const server = await serveModel({
      model: t.model,
      port: 0,
      threads: 1,
      apiKey: 'sk-ppo',
      log: () => {},
    });
    const savedKey = process.env.RL2_API_KEY;
    process.env.RL2_API_KEY = 'sk-ppo';
    try {
      const client = createSGLangEngine({ urls: [server.url], apiKey: 'sk-ppo' });
      expect((await client.health()).ok).toBe(true);
      const prompt = [3, 4, 5];
      const a = await client.generate({
        inputIds: prompt,
        sampling: { temperature: 1, max_new_tokens: 5, sampling_seed: 11 },
      });
      const b = await client.generate({
        inputIds: prompt,
        sampling: { temperature: 1, max_new_tokens: 5, sampling_seed: 11 },
      });
      expect(b.tokenIds).toEqual(a.tokenIds);
      const greedy = { temperature: 0, max_new_tokens: 4, ignore_eos: true };
      const before = await client.generate({ inputIds: prompt, sampling: greedy });

      const saveDir = join(t.dir, 'run');
      const config = loadConfig(ppoConfigSchema, {
        overrides: [
          ...t.overrides(),
          'rollout.engine=sglang',
          `rollout.server_urls=["${server.url}"]`,
          'rollout.train_prompts_per_rollout=4',
          'rollout.responses_per_prompt=4',
          'rollout.train_sampling_params.max_new_tokens=3',
          'actor.lr=5e-2',
          'trainer.max_steps=2',
          `trainer.save_dir=${saveDir}`,
          ...QUIET_TRAINER,
        ],
      });
      const res = await runPpo(config, { stdout: quiet() });
      expect(res.step).toBe(2);
      expect(existsSync(join(saveDir, 'weights', 'model.safetensors'))).toBe(true);
      // the server now generates from the pushed weights: the same prompt gets other logprobs
      const after = await client.generate({ inputIds: prompt, sampling: greedy });
      expect(after.logprobs).not.toEqual(before.logprobs);
    } finally {
      if (savedKey === undefined) delete process.env.RL2_API_KEY;
      else process.env.RL2_API_KEY = savedKey;
      await server.close();
    }
  });
});
