import type { ServerResponse } from 'node:http';
import type { GeneratedToken } from '../inference/rollout-engine.js';
import { sendEvent, startEvents } from './http-io.js';
import { chatLogprobs, completionLogprobs, usage } from './openai-answer.js';
import type { OpenAiPlan } from './openai-request.js';
import { type GenerationOutcome, outcomeText, runGeneration } from './run-generation.js';
import type { ServerContext } from './server-context.js';

/**
 * Text deltas of a growing token sequence. It holds back text that may still change: a
 * trailing incomplete UTF-8 character (U+FFFD) and a tail that could be the start of a stop
 * string (which is cut from the answer if it completes).
 */
export class TextDeltas {
  private sent = 0;

  constructor(
    private readonly decode: (ids: readonly number[]) => string,
    private readonly stops: readonly string[],
  ) {}

  /** The new text that is safe to send after `ids`. */
  next(ids: readonly number[]): string {
    const text = this.decode(ids);
    let end = text.endsWith('\uFFFD') ? text.length - 1 : text.length;
    end = Math.min(end, this.safeEnd(text));
    return this.take(text, end);
  }

  /** The rest of `finalText` (the answer as trimmed at a stop string). */
  finish(finalText: string): string {
    return this.take(finalText, finalText.length);
  }

  private take(text: string, end: number): string {
    if (end <= this.sent) return '';
    const delta = text.slice(this.sent, end);
    this.sent = end;
    return delta;
  }

  /** Where the text stops being safe: at a completed stop string, or before a possible start of one. */
  private safeEnd(text: string): number {
    let end = text.length;
    for (const stop of this.stops) {
      const at = text.indexOf(stop);
      if (at >= 0) end = Math.min(end, at);
      for (let k = Math.min(stop.length - 1, text.length); k > 0; k -= 1) {
        if (text.endsWith(stop.slice(0, k))) {
          end = Math.min(end, text.length - k);
          break;
        }
      }
    }
    return end;
  }
}

/**
 * stream=true on /v1/completions and /v1/chat/completions: server-sent `data: {...}` chunks as
 * OpenAI sends them (chat: a first chunk with the assistant role, then content deltas; each
 * choice ends with a chunk carrying its finish_reason), a usage chunk with
 * stream_options.include_usage, then `data: [DONE]`. An engine failure is sent as a
 * `data: {"error": ...}` event.
 */
export async function streamOpenAi(
  ctx: ServerContext,
  res: ServerResponse,
  plan: OpenAiPlan,
  gone: AbortSignal,
): Promise<void> {
  startEvents(res);
  const chat = plan.kind === 'chat';
  const chunk = (choice: Record<string, unknown>) => ({
    id: plan.id,
    object: chat ? 'chat.completion.chunk' : 'text_completion',
    created: plan.created,
    model: plan.model,
    choices: [choice],
  });
  const skip = plan.parsed.skipSpecialTokens;
  const noTrim = plan.parsed.sampling.no_stop_trim === true;
  const outcomes: GenerationOutcome[] = [];
  const stop = new AbortController(); // client gone, or another choice failed
  gone.addEventListener('abort', () => stop.abort(), { once: true });
  try {
    await Promise.all(
      plan.items.map(async (item, index) => {
        const deltas = new TextDeltas(
          (ids) => ctx.decode(ids, skip),
          noTrim ? [] : (item.sampling.stop ?? []),
        );
        const tokens: GeneratedToken[] = [];
        let textSent = '';
        const send = (
          text: string,
          out: GenerationOutcome,
          from: number,
          finish: GenerationOutcome | null,
        ) => {
          const logprobs =
            plan.logprobs === null
              ? null
              : chat
                ? chatLogprobs(ctx, out, from)
                : completionLogprobs(ctx, plan, out, from, out.tokenIds.length, textSent.length);
          const end = finish
            ? { finish_reason: finish.finishReason, matched_stop: finish.matched ?? null }
            : { finish_reason: null };
          sendEvent(
            res,
            chunk(
              chat
                ? { index, delta: { content: text }, logprobs, ...end }
                : { index, text, logprobs, ...end },
            ),
          );
          textSent += text;
        };
        if (chat)
          sendEvent(
            res,
            chunk({
              index,
              delta: { role: 'assistant', content: '' },
              logprobs: null,
              finish_reason: null,
            }),
          );
        const out = await runGeneration(ctx, item, stop.signal, (t) => {
          tokens.push(t);
          const text = deltas.next(tokens.map((x) => x.id));
          const sofar = {
            tokenIds: tokens.map((x) => x.id),
            logprobs: tokens.map((x) => x.logprob),
            topLogprobs: tokens.map((x) => x.top ?? []),
            finishReason: 'length' as const,
          };
          if (text !== '' || plan.logprobs !== null) send(text, sofar, tokens.length - 1, null);
        });
        outcomes[index] = out;
        send(
          deltas.finish(outcomeText(ctx, out, skip, noTrim)),
          out,
          Math.min(tokens.length, out.tokenIds.length),
          out,
        );
      }),
    );
    if (plan.includeUsage)
      sendEvent(res, {
        id: plan.id,
        object: chunk({}).object,
        created: plan.created,
        model: plan.model,
        choices: [],
        usage: usage(plan, outcomes),
      });
  } catch (e) {
    stop.abort();
    sendEvent(res, {
      error: { message: (e as Error).message, type: 'server_error', param: null, code: null },
    });
  }
  sendEvent(res, '[DONE]');
  res.end();
}
