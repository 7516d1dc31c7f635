import { describe, expect, it } from 'vitest';
import { charTokenizer, scriptedEngine } from '../../test/scripted-engine.js';
import { createEnvironment } from '../env/create-environment.js';
import type { EnvModule } from '../env/environment.js';
import { runTrajectory } from './run-trajectory.js';

const ids = { promptId: 0, sampleId: 0 };
const codes = (s: string) => charTokenizer.encode(s);
const lp = (n: number) => Array.from({ length: n }, (_, i) => -(i + 1) / 10);

function run(env: EnvModule, reply: (text: string) => string, maxTurns = 4, timeoutMs = 1000) {
  const engine = scriptedEngine(reply);
  return runTrajectory({ prompt: 'Q:', answer: 'A' }, ids, {
    engine,
    env: createEnvironment(env, { timeoutMs, source: 'test-env' }),
    tokenizer: charTokenizer,
    sampling: { max_new_tokens: 8 },
    maxTurns,
  });
}

describe('runTrajectory: multi-turn assembly', () => {
  it('single turn, done: prompt masked, action mask 1, reward on the last action token', async () => {
    const t = await run(
      { step: async (_s, a, ans) => [null, a === 'ab' && ans === 'A' ? 1 : 0, true] },
      () => 'ab',
    );
    expect(t.error).toBeUndefined();
    expect(t.sequences).toEqual([
      {
        tokenIds: codes('Q:ab'),
        actionMask: [0, 0, 1, 1],
        logprobs: [0, 0, ...lp(2)],
        rewards: [0, 0, 0, 1],
      },
    ]);
    expect(t.reward).toBe(1);
    expect(t.turns).toEqual([
      { state: 'Q:', action: 'ab', reward: 1, finishReason: 'stop', actionTokens: 2, next: 'done' },
    ]);
  });

  it('merges a next state that extends state + action; env tokens get mask 0', async () => {
    // turn 1 "c" -> env appends "=3", turn 2 "d" -> done with reward 1
    const env: EnvModule = {
      step: async (state, action) =>
        action === 'c' ? [`${state}${action}=3`, 0.5, false] : [null, 1, true],
    };
    const t = await run(env, (text) => (text === 'Q:' ? 'c' : 'd'));
    expect(t.sequences).toHaveLength(1);
    expect(t.sequences[0]).toEqual({
      tokenIds: codes('Q:c=3d'),
      actionMask: [0, 0, 1, 0, 0, 1],
      logprobs: [0, 0, -0.1, 0, 0, -0.1],
      rewards: [0, 0, 0.5, 0, 0, 1],
    });
    expect(t.turns.map((x) => x.next)).toEqual(['merge', 'done']);
    expect(t.turns[1].state).toBe('Q:c=3');
    expect(t.reward).toBe(1.5);
  });

  it('starts a new sequence when the next state rewrites history', async () => {
    const env: EnvModule = {
      step: async (_s, action) => (action === 'xy' ? ['NEW:', 0, false] : [null, 2, true]),
    };
    const t = await run(env, (text) => (text === 'Q:' ? 'xy' : 'z'));
    expect(t.sequences).toEqual([
      {
        tokenIds: codes('Q:xy'),
        actionMask: [0, 0, 1, 1],
        logprobs: [0, 0, ...lp(2)],
        rewards: [0, 0, 0, 0],
      },
      {
        tokenIds: codes('NEW:z'),
        actionMask: [0, 0, 0, 0, 1],
        logprobs: [0, 0, 0, 0, -0.1],
        rewards: [0, 0, 0, 0, 2],
      },
    ]);
    expect(t.turns.map((x) => x.next)).toEqual(['split', 'done']);
  });

  it('closes at max turns even if the env is not done, after rewarding the last turn', async () => {
    const t = await run({ step: async (s, a) => [s + a, 1, false] }, () => 'k', 3);
    expect(t.turns.map((x) => x.next)).toEqual(['merge', 'merge', 'max_turns']);
    expect(t.sequences[0].tokenIds).toEqual(codes('Q:kkk'));
    expect(t.sequences[0].rewards).toEqual([0, 0, 1, 1, 1]);
    expect(t.reward).toBe(3);
  });

  it('caps max_new_tokens to the room under maxSequenceTokens and ends a full trajectory', async () => {
    const engine = scriptedEngine((_text, req) => 'x'.repeat(req.sampling.max_new_tokens!));
    const env = createEnvironment({ step: async (s, a) => [`${s}${a}||`, 0, false] });
    const t = await runTrajectory({ prompt: 'Q:' }, ids, {
      engine,
      env,
      tokenizer: charTokenizer,
      sampling: { max_new_tokens: 4 },
      maxTurns: 5,
      maxSequenceTokens: 12,
    });
    // Q: + xxxx + || = 8 tokens; turn 2 gets the 4 left: 12, and '||' would leave no room
    expect(engine.requests.map((r) => r.sampling.max_new_tokens)).toEqual([4, 4]);
    expect(t.turns.map((x) => x.next)).toEqual(['merge', 'max_length']);
    expect(t.sequences[0].tokenIds).toEqual(codes('Q:xxxx||xxxx'));
    const tight = await runTrajectory({ prompt: 'Q:' }, ids, {
      engine,
      env,
      tokenizer: charTokenizer,
      sampling: { max_new_tokens: 4 },
      maxTurns: 5,
      maxSequenceTokens: 5,
    });
    expect(tight.sequences[0].tokenIds).toEqual(codes('Q:xxx'));
    expect(tight.turns.map((x) => x.next)).toEqual(['max_length']);
    const none = await runTrajectory({ prompt: 'Q:' }, ids, {
      engine,
      env,
      tokenizer: charTokenizer,
      sampling: {},
      maxSequenceTokens: 2,
    });
    expect(none.error?.message).toMatch(
      /the prompt has 2 tokens, no room under maxSequenceTokens = 2/,
    );
  });

  it('accepts the object form, snake_case, boolean rewards and reset', async () => {
    const env: EnvModule = {
      reset: async (p) => ({ state: `${p.prompt}!`, answer: 42 }),
      step: async (_s, _a, answer) =>
        ({ next_state: null, reward: answer === 42, done: true }) as never,
    };
    const engine = scriptedEngine((text) => (text === 'Q:!' ? 'r' : '?'));
    const t = await runTrajectory({ prompt: 'Q:' }, ids, {
      engine,
      env: createEnvironment(env),
      tokenizer: charTokenizer,
      sampling: {},
    });
    expect(t.answer).toBe(42);
    expect(t.sequences[0].tokenIds).toEqual(codes('Q:!r'));
    expect(t.reward).toBe(1);
  });

  it('marks the sample failed when the env throws, returns garbage, or hangs', async () => {
    const thrown = await run(
      {
        step: async () => {
          throw new Error('tool crashed');
        },
      },
      () => 'a',
    );
    expect(thrown.error).toEqual({
      code: 'ENV_STEP',
      message: 'test-env step() threw: tool crashed',
    });
    expect(thrown.sequences[0].tokenIds).toEqual(codes('Q:a'));

    const garbage = await run({ step: async () => [null, Number.NaN, true] }, () => 'a');
    expect(garbage.error?.code).toBe('ENV_STEP');
    expect(garbage.error?.message).toMatch(/reward NaN: it must be a finite number/);

    const notDone = await run({ step: async () => [undefined, 0, false] }, () => 'a');
    expect(notDone.error?.message).toMatch(/done=false with nextState/);

    const hung = await run({ step: () => new Promise(() => {}) }, () => 'a', 1, 30);
    expect(hung.error?.code).toBe('ENV_TIMEOUT');
    expect(hung.error?.message).toMatch(
      /test-env step\(\) did not finish within 0.03 s \(raise rollout.env_timeout_s/,
    );
  });

  it('resumes a turn that the engine aborted (pause) and keeps the partial tokens', async () => {
    let calls = 0;
    const engine = scriptedEngine((text, req) => {
      calls += 1;
      if (calls === 1) return { tokenIds: codes('he'), logprobs: [-1, -2], finishReason: 'abort' };
      expect(text).toBe('Q:he');
      expect(req.sampling.max_new_tokens).toBe(6);
      return { tokenIds: codes('y'), logprobs: [-3], finishReason: 'stop' };
    });
    const env = createEnvironment({ step: async (_s, a) => [null, a === 'hey' ? 1 : 0, true] });
    const t = await runTrajectory({ prompt: 'Q:' }, ids, {
      engine,
      env,
      tokenizer: charTokenizer,
      sampling: { max_new_tokens: 8 },
    });
    expect(t.sequences[0].logprobs).toEqual([0, 0, -1, -2, -3]);
    expect(t.reward).toBe(1);
    expect(t.turns[0].finishReason).toBe('stop');
  });

  it('passes seed + turn to the engine and rejects only on cancellation', async () => {
    const engine = scriptedEngine(() => 'a');
    const env = createEnvironment({ step: async (s, a) => [s + a, 0, false] });
    await runTrajectory({ prompt: 'Q:' }, ids, {
      engine,
      env,
      tokenizer: charTokenizer,
      sampling: {},
      maxTurns: 3,
      seed: 100,
    });
    expect(engine.requests.map((r) => r.sampling.sampling_seed)).toEqual([100, 101, 102]);
    const controller = new AbortController();
    controller.abort();
    const cancelled = scriptedEngine(() => {
      throw new Error('cancelled');
    });
    await expect(
      runTrajectory({ prompt: 'Q:' }, ids, {
        engine: cancelled,
        env,
        tokenizer: charTokenizer,
        sampling: {},
        signal: controller.signal,
      }),
    ).rejects.toThrow(/cancelled/);
  });
});
