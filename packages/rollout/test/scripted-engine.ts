import type {
  GenerateRequest,
  GenerateResult,
  RolloutEngine,
} from '../src/inference/rollout-engine.js';
import type { RolloutTokenizer } from '../src/trajectory/rollout-tokenizer.js';

/** One token per UTF-16 unit: token id = char code. */
export const charTokenizer: RolloutTokenizer = {
  encode: (text) => Array.from(text, (c) => c.charCodeAt(0)),
  decode: (ids) => String.fromCharCode(...ids),
};

/**
 * A test engine that answers from a function of the decoded input text. Each generated token
 * gets logprob -(index + 1) / 10 so tests can tell them apart.
 */
export function scriptedEngine(
  reply: (inputText: string, request: GenerateRequest) => string | GenerateResult,
): RolloutEngine & { requests: GenerateRequest[] } {
  const requests: GenerateRequest[] = [];
  return {
    requests,
    async generate(request) {
      requests.push(request);
      const out = reply(charTokenizer.decode(request.inputIds), request);
      if (typeof out !== 'string') return out;
      const tokenIds = charTokenizer.encode(out);
      return { tokenIds, logprobs: tokenIds.map((_, i) => -(i + 1) / 10), finishReason: 'stop' };
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
