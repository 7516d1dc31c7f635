import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { tempDir } from '@rl2/vitest-config/temp-dir';
import { describe, expect, it } from 'vitest';
import { charTokenizer, scriptedEngine } from '../../test/scripted-engine.js';
import { createEmbeddedEngine } from '../inference/embedded-engine.js';
import type { GenerateRequest } from '../inference/rollout-engine.js';
import { createEnvironment } from '../env/create-environment.js';
import { RolloutError } from '../errors.js';
import type { RolloutPrompt } from '../env/environment.js';
import { type RolloutRunnerOptions, createRolloutRunner } from './rollout-runner.js';

/** Prompts from a fixed list, in order. */
function queue(names: string[]): RolloutRunnerOptions['nextPrompts'] {
  const rest = [...names];
  return (n) => rest.splice(0, n).map((prompt): RolloutPrompt => ({ prompt, answer: 'a' }));
}

/** "U*" prompts: every sample answers 'same' (uniform group); others alternate 'a'/'b' by seed. */
const reply = (text: string, req: GenerateRequest) => {
  if (text.startsWith('U')) return 'same';
  if (text.startsWith('F')) return 'boom';
  return Math.floor(req.sampling.sampling_seed! / 1000) % 2 === 0 ? 'a' : 'b';
};
const env = createEnvironment({
  step: async (_s, action, answer) => {
    if (action === 'boom') throw new Error('calculator exploded');
    return [null, action === answer ? 1 : 0, true];
  },
});

function runner(names: string[], extra: Partial<RolloutRunnerOptions> = {}) {
  const logs: string[] = [];
  const r = createRolloutRunner({
    engine: scriptedEngine(reply),
    env,
    tokenizer: charTokenizer,
    nextPrompts: queue(names),
    promptsPerStep: 3,
    responsesPerPrompt: 2,
    sampling: { temperature: 1, max_new_tokens: 8 },
    seed: 0,
    log: (m) => logs.push(m),
    ...extra,
  });
  return { r, logs };
}

describe('createRolloutRunner', () => {
  it('keeps every group without filtering and lays out consecutive trajectory ids', async () => {
    const { r } = runner(['M1', 'U1', 'M2']);
    const out = await r.step(1);
    expect(out.groups.map((g) => g[0].prompt).sort()).toEqual(['M1', 'M2', 'U1']);
    expect(out.batch.trajectoryIds).toEqual([0, 1, 2, 3, 4, 5]);
    expect(out.metrics.groups).toBe(3);
    expect(out.metrics.filtering_ratio).toBe(0);
    // mixed groups score [1, 0]; the uniform group [0, 0]: mean 2/6
    expect(out.metrics['reward/mean']).toBeCloseTo(2 / 6, 12);
    expect(out.metrics['reward/std']).toBeCloseTo(Math.sqrt(2 / 6 - (2 / 6) ** 2), 12);
    const first = out.batch.sequences[0];
    const g0 = out.groups[0][0].sequences[0];
    expect(first.states).toEqual(g0.tokenIds.slice(0, -1));
    expect(first.actions).toEqual(g0.tokenIds.slice(1));
    expect(first.actionMask).toEqual(g0.actionMask.slice(1));
  });

  it('hands the groups and the saved records over in launch order, not in the order they finished', async () => {
    // M1 finishes last and M3 first: the batch order must not follow the timing (it changes the
    // training step's sums, and two runs of one seed would drift apart)
    const engine = scriptedEngine(reply);
    const generate = engine.generate;
    engine.generate = async (req) => {
      const text = charTokenizer.decode(req.inputIds);
      await new Promise((r) => setTimeout(r, 10 * (4 - Number(text[1]))));
      return generate(req);
    };
    const dir = tempDir('rl2-rollout-order-');
    const { r } = runner(['M1', 'M2', 'M3'], { engine, saveDir: dir });
    const out = await r.step(1);
    expect(out.groups.map((g) => g[0].prompt)).toEqual(['M1', 'M2', 'M3']);
    expect(out.batch.sequences[0].states).toEqual(
      out.groups[0][0].sequences[0].tokenIds.slice(0, -1),
    );
    const saved = readFileSync(join(dir, 'step-1.jsonl'), 'utf8').trim().split('\n');
    expect(saved.map((l) => JSON.parse(l).prompt)).toEqual(['M1', 'M1', 'M2', 'M2', 'M3', 'M3']);
  });

  it('dynamic filtering drops uniform groups and reports the ratio', async () => {
    const { r } = runner(['M1', 'U1', 'M2'], { dynamicFiltering: true });
    const out = await r.step(1);
    expect(out.groups.map((g) => g[0].prompt).sort()).toEqual(['M1', 'M2']);
    expect(out.metrics.filtering_ratio).toBeCloseTo(1 / 3, 12);
    for (const g of out.groups) expect(g.map((t) => t.reward).sort()).toEqual([0, 1]);
  });

  it('refill oversamples until the batch is full', async () => {
    const { r } = runner(['M1', 'U1', 'U2', 'M2', 'U3', 'M3', 'M4'], {
      dynamicFiltering: true,
      refill: true,
    });
    const out = await r.step(1);
    expect(out.groups).toHaveLength(3);
    expect(out.groups.every((g) => g[0].prompt.startsWith('M'))).toBe(true);
    expect(out.metrics.filtering_ratio).toBeCloseTo(3 / 6, 12);
  });

  it('refill stops at maxGroupsPerStep or when the prompts run out', async () => {
    const capped = runner(['U1', 'U2', 'U3', 'U4', 'M1', 'M2', 'M3'], {
      dynamicFiltering: true,
      refill: true,
      maxGroupsPerStep: 5,
    });
    const out = await capped.r.step(1);
    expect(out.groups.map((g) => g[0].prompt)).toEqual(['M1']);
    const dry = runner(['U1', 'M1'], { dynamicFiltering: true, refill: true });
    expect((await dry.r.step(1)).groups).toHaveLength(1);
  });

  it('drops a group whose sample failed, logs and counts it; onSampleError stop throws', async () => {
    const { r, logs } = runner(['M1', 'F1', 'M2']);
    const out = await r.step(4);
    expect(out.groups).toHaveLength(2);
    expect(out.metrics.failures).toBe(2);
    expect(logs).toHaveLength(2);
    expect(logs[0]).toMatch(
      /rollout step 4: sample 0 of prompt 1 failed \(ENV_STEP\): env step\(\) threw: calculator exploded/,
    );
    const strict = runner(['M1', 'F1', 'M2'], { onSampleError: 'stop' });
    await expect(strict.r.step(1)).rejects.toMatchObject({
      code: 'ROLLOUT_FAILED',
      message: expect.stringMatching(
        /calculator exploded \(rollout.on_sample_error=stop; set it to skip/,
      ),
    });
  });

  it('counts failures by cause (env errors, env timeouts, engine errors) and keeps the first one', async () => {
    const engine = scriptedEngine((text) => {
      if (text.startsWith('X')) throw new Error('CUDA out of memory');
      return text.startsWith('F') ? 'boom' : 'a';
    });
    const slow = createEnvironment(
      { step: async (_s, a) => (a === 'a' ? new Promise(() => {}) : [null, 1, true]) },
      { timeoutMs: 20 },
    );
    const { r } = runner(['F1', 'X1', 'M1'], { engine });
    const out = await r.step(2);
    expect(out.metrics).toMatchObject({
      samples: 6,
      failures: 4,
      env_errors: 2,
      env_timeouts: 0,
      engine_errors: 2,
    });
    expect(out.firstFailure).toMatch(/^sample \d of prompt \d failed \((ENV_STEP|ENGINE_FAILED)\)/);
    const timed = runner(['M1', 'M2', 'M3'], { env: slow, engine: scriptedEngine(() => 'a') });
    expect((await timed.r.step(1)).metrics).toMatchObject({
      samples: 6,
      failures: 6,
      env_timeouts: 6,
    });
  });

  it('an engine that cannot be reached after its retries stops the step at once, in training and evaluation', async () => {
    const engine = scriptedEngine(() => {
      throw new RolloutError(
        'ENGINE_UNREACHABLE',
        '/generate failed after 4 attempt(s) on http://127.0.0.1:9: cannot reach http://127.0.0.1:9/generate (ECONNREFUSED)',
      );
    });
    const { r } = runner(['M1', 'M2', 'M3'], { engine });
    await expect(r.step(5)).rejects.toMatchObject({
      code: 'ENGINE_UNREACHABLE',
      message: expect.stringContaining(
        'rollout step 5: the inference engine cannot be reached after its retries, stopping: /generate failed after 4 attempt(s)',
      ),
    });
    await expect(r.evaluate([{ prompt: 'M9' }], 5)).rejects.toMatchObject({
      code: 'ENGINE_UNREACHABLE',
      message: expect.stringContaining('eval step 5:'),
    });
  });

  it('never runs more samples at once than the concurrency limit', async () => {
    let active = 0;
    let peak = 0;
    const engine = scriptedEngine(() => 'a');
    const generate = engine.generate;
    engine.generate = async (req) => {
      active += 1;
      peak = Math.max(peak, active);
      await new Promise((r) => setTimeout(r, 1));
      active -= 1;
      return generate(req);
    };
    const { r } = runner(['M1', 'M2', 'M3'], { engine, concurrency: 4 });
    await r.step(1);
    expect(peak).toBe(4);
  });

  it('saves every finished trajectory as JSONL per step, with the filtered flag', async () => {
    const dir = tempDir('rl2-rollouts-');
    const { r } = runner(['M1', 'U1', 'M2', 'E1'], { dynamicFiltering: true, saveDir: dir });
    await r.step(7);
    const lines = readFileSync(join(dir, 'step-7.jsonl'), 'utf8')
      .trim()
      .split('\n')
      .map((l) => JSON.parse(l));
    expect(lines).toHaveLength(6);
    expect(lines.filter((l) => l.filtered).map((l) => l.prompt)).toEqual(['U1', 'U1']);
    expect(lines[0]).toMatchObject({ step: 7, turns: [{ state: expect.any(String) }] });
    const ev = await r.evaluate(
      [
        { prompt: 'M9', answer: 'a' },
        { prompt: 'U9', answer: 'same' },
      ],
      7,
    );
    expect(ev.trajectories).toHaveLength(2);
    expect(ev.metrics['reward/mean']).toBe(0.5);
    expect(readFileSync(join(dir, 'eval-step-7.jsonl'), 'utf8').trim().split('\n')).toHaveLength(2);
  });

  it('evaluates at temperature 0 with one response per prompt', async () => {
    const engine = scriptedEngine(() => 'a');
    const { r } = runner([], { engine });
    await r.evaluate([{ prompt: 'M1' }, { prompt: 'M2' }], 1);
    expect(engine.requests.map((q) => q.sampling.temperature)).toEqual([0, 0]);
  });

  it('partial rollout: pauses the engine, carries the slow group, and finishes it next step', async () => {
    const slowTokens = 400;
    const engine = createEmbeddedEngine({
      generator: {
        async generate(req) {
          const text = charTokenizer.decode(req.inputIds);
          if (!text.startsWith('SLOW'))
            return { outputIds: [97], logprobs: [-0.5], finishReason: { type: 'stop' } };
          const outputIds: number[] = [];
          while (outputIds.length < req.maxNewTokens!) {
            if (req.signal?.aborted)
              return {
                outputIds,
                logprobs: outputIds.map(() => -1),
                finishReason: { type: 'abort' },
              };
            outputIds.push(115);
            await new Promise((r) => setImmediate(r));
          }
          return { outputIds, logprobs: outputIds.map(() => -1), finishReason: { type: 'length' } };
        },
      },
    });
    const r = createRolloutRunner({
      engine,
      env: createEnvironment({ step: async (_s, a) => [null, a.length, true] }),
      tokenizer: charTokenizer,
      nextPrompts: queue(['SLOW', 'A1', 'A2', 'A3', 'A4']),
      promptsPerStep: 1,
      groupsInFlight: 2,
      partialRollout: true,
      sampling: { max_new_tokens: slowTokens },
    });
    const s1 = await r.step(1);
    expect(s1.groups[0][0].prompt).toBe('A1');
    expect(s1.metrics.carried_groups).toBe(1);
    expect(r.carried).toBe(1);
    const all = [...s1.groups];
    for (let step = 2; step <= 6 && !all.some((g) => g[0].prompt === 'SLOW'); step += 1)
      all.push(...(await r.step(step)).groups);
    // the fast prompts finish first each step; SLOW completes once the prompts run out (step 5)
    expect(all.map((g) => g[0].prompt)).toEqual(['A1', 'A2', 'A3', 'A4', 'SLOW']);
    const slow = all[4][0];
    expect(slow.turns[0].actionTokens).toBe(slowTokens);
    expect(slow.turns[0].finishReason).toBe('length');
    expect(slow.sequences[0].actionMask.filter((m) => m === 1)).toHaveLength(slowTokens);
    await r.close();
  });

  it('names bad sizes', () => {
    expect(() => runner([], { promptsPerStep: 0 })).toThrow(
      'promptsPerStep (rollout.train_prompts_per_rollout) must be an integer >= 1, got 0',
    );
    expect(() => runner([], { groupsInFlight: 2 })).toThrow(
      /groupsInFlight \(rollout.groups_in_flight\)/,
    );
  });
});
