import type { IncomingMessage, ServerResponse } from 'node:http';
import { HttpError, badRequest } from './http-io.js';
import { openAiAnswer } from './openai-answer.js';
import { type OpenAiPlan, planChat, planCompletion } from './openai-request.js';
import { streamOpenAi } from './openai-stream.js';
import { runGeneration } from './run-generation.js';
import { loraModelCards } from './lora-control.js';
import type { ServerContext } from './server-context.js';

/** The one model card of /v1/models. */
function modelCard(ctx: ServerContext) {
  return {
    id: ctx.servedModelName,
    object: 'model',
    created: 0,
    owned_by: 'rl2',
    root: ctx.servedModelName,
    parent: null,
    max_model_len: ctx.contextLength ?? null,
  };
}

/** GET /v1/models. */
export function listModels(ctx: ServerContext) {
  return { object: 'list', data: [modelCard(ctx), ...loraModelCards(ctx)] };
}

/** GET /v1/models/{id}: the card, or OpenAI's 404 model_not_found. */
export function retrieveModel(ctx: ServerContext, id: string) {
  const adapter = loraModelCards(ctx).find((c) => c.id === id);
  if (adapter) return adapter;
  if (id !== ctx.servedModelName) {
    throw new HttpError(404, `The model '${id}' does not exist`, {
      type: 'invalid_request_error',
      param: 'model',
      code: 'model_not_found',
    });
  }
  return modelCard(ctx);
}

/** SGLang's OpenAI endpoints take JSON bodies only (400 otherwise). */
export function requireJson(req: IncomingMessage): void {
  const type = (req.headers['content-type'] ?? '').split(';')[0]!.trim().toLowerCase();
  if (type !== 'application/json')
    throw badRequest("Unsupported Media Type: Only 'application/json' is allowed");
}

/** POST /v1/completions or /v1/chat/completions: a whole answer, or a stream of chunks. */
export async function handleOpenAi(
  ctx: ServerContext,
  res: ServerResponse,
  body: Record<string, unknown> | undefined,
  kind: OpenAiPlan['kind'],
): Promise<unknown> {
  if (!body) throw badRequest('the request needs a JSON body');
  const plan = kind === 'chat' ? planChat(ctx, body) : planCompletion(ctx, body);
  const gone = new AbortController();
  res.on('close', () => {
    if (!res.writableFinished) gone.abort();
  });
  if (plan.stream) return streamOpenAi(ctx, res, plan, gone.signal);
  const outcomes = await Promise.all(
    plan.items.map((item) => runGeneration(ctx, item, gone.signal)),
  );
  return openAiAnswer(ctx, plan, outcomes);
}
