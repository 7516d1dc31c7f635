import type { Tokenizer } from '@rl2/data';
import type { GenerateRequest, GenerateResult, RolloutEngine } from '@rl2/rollout';

/**
 * An engine that plays Search-R1 the way a trained model would, so a test can drive the env
 * through real rollouts: it searches for the prompt's question, then answers with the title of
 * the first passage it got back, every other answer "I do not know" (so groups differ). Weight
 * updates are accepted and ignored.
 */
export function scriptedSearcher(tokenizer: Tokenizer): RolloutEngine & { requests: number } {
  let answers = 0;
  const engine = {
    requests: 0,
    async generate(request: GenerateRequest): Promise<GenerateResult> {
      engine.requests += 1;
      const text = tokenizer.decode(request.inputIds);
      const tokenIds = tokenizer.encode(reply(text, answers), { addSpecialTokens: false });
      if (text.includes('<information>Doc') || text.includes('Let me try again')) answers += 1;
      return { tokenIds, logprobs: tokenIds.map(() => -0.1), finishReason: 'stop' };
    },
    async updateWeights() {},
    async flushCache() {},
    async health() {
      return { ok: true, backends: [] };
    },
    async pause() {},
    async continue() {},
  };
  return engine;
}

function reply(text: string, answers: number): string {
  // the prompt's instructions name <information> too: a result starts with "Doc 1"
  const results = text.split('<information>Doc 1(Title: ');
  if (results.length > 1) {
    const title = /^([^)]*)\)/.exec(results.at(-1) ?? '')?.[1] ?? 'nothing';
    return `<answer> ${answers % 2 === 0 ? title : 'I do not know'} </answer>`;
  }
  if (text.includes('Let me try again')) return '<answer> I do not know </answer>';
  const question = /Question: ([\s\S]*?)<\|im_end\|>/.exec(text)?.[1] ?? text.slice(-40);
  return `<think>I need to look this up</think><search> ${question.trim()} </search>`;
}
