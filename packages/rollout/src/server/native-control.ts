import type { ServerResponse } from 'node:http';
import { badRequest, HttpError, sendEmpty, sendText } from './http-io.js';
import type { ServerContext } from './server-context.js';

/** SGLang waits this long for /health_generate's one token (SGLANG_HEALTH_CHECK_TIMEOUT). */
const HEALTH_GENERATE_TIMEOUT_MS = 20_000;

/** What /server_info reports besides the model. */
export interface ServerFacts {
  host: string;
  port: number;
  version: string;
  /** Parameter bytes on each tensor-parallel rank (one entry without tp). */
  rankParamBytes?: () => readonly number[];
}

/** GET /health: 200 with no body when the engine is up, 503 otherwise. */
export async function handleHealth(ctx: ServerContext, res: ServerResponse): Promise<void> {
  const h = await ctx.engine.health();
  if (!h.ok)
    throw new HttpError(
      503,
      `engine unhealthy: ${h.backends.map((b) => `${b.name}: ${b.error ?? 'down'}`).join('; ')}`,
    );
  sendEmpty(res, 200);
}

/** GET /health_generate: generates one token (as SGLang does); 503 when none comes within 20 s (e.g. while paused). */
export async function handleHealthGenerate(ctx: ServerContext, res: ServerResponse): Promise<void> {
  const signal = AbortSignal.timeout(HEALTH_GENERATE_TIMEOUT_MS);
  try {
    await ctx.engine.generate({
      inputIds: [0],
      sampling: { max_new_tokens: 1, temperature: 0 },
      signal,
    });
  } catch (e) {
    throw new HttpError(503, `health check generation failed: ${(e as Error).message}`);
  }
  sendEmpty(res, 200);
}

/** GET /get_model_info, as SGLang answers it. */
export function modelInfo(ctx: ServerContext) {
  return {
    model_path: ctx.modelPath,
    tokenizer_path: ctx.tokenizer ? ctx.modelPath : null,
    is_generation: true,
    preferred_sampling_params: null,
    weight_version: ctx.weightVersion,
  };
}

/** GET /server_info (and the older /get_server_info): the settings SGLang lists that rl2 serve has. */
export function serverInfo(ctx: ServerContext, facts: ServerFacts) {
  return {
    model_path: ctx.modelPath,
    tokenizer_path: ctx.tokenizer ? ctx.modelPath : null,
    served_model_name: ctx.servedModelName,
    host: facts.host,
    port: facts.port,
    context_length: ctx.contextLength ?? null,
    skip_tokenizer_init: !ctx.tokenizer,
    weight_version: ctx.weightVersion,
    tp_size: facts.rankParamBytes?.().length ?? 1,
    // rl2's own: what each tp rank holds (SGLang's internal_states are per-scheduler facts too)
    internal_states: [facts.rankParamBytes ? { rank_param_bytes: facts.rankParamBytes() } : {}],
    version: facts.version,
  };
}

/** GET|POST /flush_cache: SGLang answers with this text. */
export async function handleFlushCache(ctx: ServerContext, res: ServerResponse): Promise<void> {
  await ctx.engine.flushCache();
  sendText(
    res,
    200,
    'Cache flushed.\nPlease check backend logs for more details. (When there are running or ' +
      'waiting requests, the operation will not be performed.)\n',
  );
}

/**
 * POST /update_weights_from_disk {model_path, load_format?, abort_all_requests?, weight_version?}:
 * {success, message, num_paused_requests}, HTTP 200, or 400 when the load fails (SGLang's codes).
 */
export async function handleUpdateWeights(
  ctx: ServerContext,
  body: Record<string, unknown>,
): Promise<unknown> {
  const path = body.model_path;
  if (typeof path !== 'string' || path === '') {
    throw badRequest(
      `update_weights_from_disk needs {"model_path": "<checkpoint folder>"}, got model_path=${JSON.stringify(path)}`,
      'model_path',
    );
  }
  const format = body.load_format;
  const refuse = (message: string) =>
    new HttpError(400, message, { body: { success: false, message, num_paused_requests: 0 } });
  if (format !== undefined && format !== null && format !== 'auto' && format !== 'safetensors') {
    throw refuse(
      `load_format ${JSON.stringify(format)} is not supported by rl2 serve: it reads Hugging Face safetensors folders (auto)`,
    );
  }
  const version = body.weight_version;
  if (version !== undefined && version !== null && typeof version !== 'string')
    throw badRequest('weight_version must be a string', 'weight_version');
  let paused = 0;
  if (body.abort_all_requests === true) {
    paused = ctx.registry.abort();
    await ctx.engine.pause();
    await ctx.engine.continue();
  }
  try {
    await ctx.engine.updateWeights(path);
  } catch (e) {
    throw refuse(`Failed to update weights from ${path}: ${(e as Error).message}`);
  }
  let message = 'Succeeded to update model weights.';
  if (typeof version === 'string') {
    ctx.weightVersion = version;
    message += ` Weight version updated to ${version}.`;
  }
  return { success: true, message, num_paused_requests: paused };
}

/** POST /pause_generation {mode?: "abort"}: running requests end with finish reason abort; new ones wait. */
export async function handlePause(
  ctx: ServerContext,
  body: Record<string, unknown> | undefined,
): Promise<unknown> {
  const mode = body?.mode;
  if (mode !== undefined && mode !== null && mode !== 'abort') {
    throw badRequest(
      `pause_generation mode ${JSON.stringify(mode)} is not supported by rl2 serve; it pauses ` +
        'with mode "abort" (running requests end and return their tokens)',
      'mode',
    );
  }
  await ctx.engine.pause();
  return { message: 'Generation paused successfully.', status: 'ok' };
}

/** POST /continue_generation. */
export async function handleContinue(ctx: ServerContext): Promise<unknown> {
  await ctx.engine.continue();
  return { message: 'Generation continued successfully.', status: 'ok' };
}

/** POST /abort_request {rid} or {abort_all: true}: those requests end with finish reason abort. */
export function handleAbort(
  ctx: ServerContext,
  res: ServerResponse,
  body: Record<string, unknown> | undefined,
): void {
  const rid = body?.rid;
  if (body?.abort_all === true) ctx.registry.abort();
  else if (typeof rid === 'string' && rid !== '') ctx.registry.abort(rid);
  else
    throw badRequest('abort_request needs {"rid": "<request id>"} or {"abort_all": true}', 'rid');
  sendEmpty(res, 200);
}
