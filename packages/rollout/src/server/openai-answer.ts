import type { TokenLogprob } from '../inference/rollout-engine.js';
import type { OpenAiPlan } from './openai-request.js';
import { type GenerationOutcome, outcomeText } from './run-generation.js';
import type { ServerContext } from './server-context.js';

/** usage: prompt tokens counted once per prompt, completion tokens over every choice. */
export function usage(plan: OpenAiPlan, outcomes: GenerationOutcome[]) {
  const completion = outcomes.reduce((a, o) => a + o.tokenIds.length, 0);
  return {
    prompt_tokens: plan.promptTokens,
    completion_tokens: completion,
    total_tokens: plan.promptTokens + completion,
  };
}

/** The text of one token, as OpenAI's logprobs list it (partial UTF-8 sequences show as U+FFFD). */
function tokenText(ctx: ServerContext, id: number): string {
  return ctx.decode([id], false);
}

/** /v1/completions `logprobs` (legacy format) of tokens [from, to) of an outcome. */
export function completionLogprobs(
  ctx: ServerContext,
  plan: OpenAiPlan,
  out: GenerationOutcome,
  from = 0,
  to = out.tokenIds.length,
  offset0 = 0,
) {
  const ids = out.tokenIds.slice(from, to);
  const tokens = ids.map((id) => tokenText(ctx, id));
  const offsets: number[] = [];
  let offset = offset0;
  for (const t of tokens) {
    offsets.push(offset);
    offset += t.length;
  }
  const top = (k: number) =>
    Object.fromEntries((out.topLogprobs?.[k] ?? []).map((t) => [tokenText(ctx, t.id), t.logprob]));
  return {
    tokens,
    token_logprobs: out.logprobs.slice(from, to),
    top_logprobs: plan.logprobs ? ids.map((_, k) => top(from + k)) : ids.map(() => null),
    text_offset: offsets,
  };
}

/** /v1/chat/completions `logprobs.content` of tokens [from, to) of an outcome. */
export function chatLogprobs(
  ctx: ServerContext,
  out: GenerationOutcome,
  from = 0,
  to = out.tokenIds.length,
) {
  const entry = (t: TokenLogprob) => {
    const token = tokenText(ctx, t.id);
    return { token, logprob: t.logprob, bytes: [...Buffer.from(token, 'utf8')] };
  };
  return {
    content: out.tokenIds.slice(from, to).map((id, k) => ({
      ...entry({ id, logprob: out.logprobs[from + k]! }),
      top_logprobs: (out.topLogprobs?.[from + k] ?? []).map(entry),
    })),
  };
}

/** The whole (not streamed) answer of a plan. */
export function openAiAnswer(ctx: ServerContext, plan: OpenAiPlan, outcomes: GenerationOutcome[]) {
  const skip = plan.parsed.skipSpecialTokens;
  const noTrim = plan.parsed.sampling.no_stop_trim === true;
  const choices = outcomes.map((out, index) => {
    const text = outcomeText(ctx, out, skip, noTrim);
    // finish_reason is OpenAI's 'stop' | 'length', or SGLang's 'abort' for aborted requests
    const common = { index, finish_reason: out.finishReason, matched_stop: out.matched ?? null };
    if (plan.kind === 'completion') {
      return {
        ...common,
        text,
        logprobs: plan.logprobs === null ? null : completionLogprobs(ctx, plan, out),
      };
    }
    return {
      ...common,
      message: { role: 'assistant', content: text },
      logprobs: plan.logprobs === null ? null : chatLogprobs(ctx, out),
    };
  });
  return {
    id: plan.id,
    object: plan.kind === 'chat' ? 'chat.completion' : 'text_completion',
    created: plan.created,
    model: plan.model,
    choices,
    usage: usage(plan, outcomes),
  };
}
