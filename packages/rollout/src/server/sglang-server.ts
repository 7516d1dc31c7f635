import { type IncomingMessage, type ServerResponse, createServer } from 'node:http';
import type { AddressInfo } from 'node:net';
import type { RolloutEngine } from '../inference/rollout-engine.js';
import { RolloutError } from '../errors.js';
import { checkAccess } from './auth.js';
import { HttpError, badRequest, readJson, sendJson } from './http-io.js';
import {
  type ServerFacts,
  handleAbort,
  handleContinue,
  handleFlushCache,
  handleHealth,
  handleHealthGenerate,
  handlePause,
  handleUpdateWeights,
  modelInfo,
  serverInfo,
} from './native-control.js';
import { handleGenerate } from './native-generate.js';
import { handleOpenAi, listModels, requireJson, retrieveModel } from './openai-api.js';
import { RequestRegistry, type ServedTokenizer, type ServerContext } from './server-context.js';
import { handleLoadLora, handleUnloadLora } from './lora-control.js';

export interface SGLangServerOptions {
  /** Interface to bind. Default '127.0.0.1' (loopback only); pass '0.0.0.0' deliberately to expose it. */
  host?: string;
  /** Port; 0 picks a free one. Default 30000. */
  port?: number;
  /** Largest request body accepted, bytes; bigger ones get HTTP 413. Default 8 MiB. */
  maxBodyBytes?: number;
  /** Text input, `text` fields, stop strings and the OpenAI API (chat template included); the @rl2/data Tokenizer fits. */
  tokenizer?: ServedTokenizer;
  /** Turns ids into text when there is no tokenizer; '' without either. */
  decode?: (ids: readonly number[]) => string;
  /** Reported by GET /get_model_info. */
  modelPath?: string;
  /** The model id of the OpenAI API (GET /v1/models). Default: modelPath, else 'default'. */
  servedModelName?: string;
  /** Vocabulary size: prompt ids at or above it get HTTP 400. */
  vocabSize?: number;
  /** Context length (max_position_embeddings): longer prompt plus new tokens get HTTP 400. */
  contextLength?: number;
  /** When set, every endpoint but /health... needs `Authorization: Bearer KEY` (SGLang's --api-key). */
  apiKey?: string;
  /** Reported by GET /server_info. */
  version?: string;
  /** Parameter bytes on each tensor-parallel rank, reported by GET /server_info (tp_size, internal_states). */
  rankParamBytes?: () => readonly number[];
  /** Told about requests that failed inside the server (HTTP 500). */
  onError?: (error: Error, request: string) => void;
}

export interface SGLangServer {
  /** Base URL, e.g. http://127.0.0.1:30000. */
  url: string;
  port: number;
  /** Ends the requests in flight (finish reason abort) and stops listening. */
  close(): Promise<void>;
}

type Handler = (call: {
  req: IncomingMessage;
  res: ServerResponse;
  path: string;
  body: Record<string, unknown> | undefined;
}) => unknown;

interface Route {
  methods: string[];
  handle: Handler;
}

/**
 * Serves any RolloutEngine over SGLang's native HTTP API and the OpenAI API:
 * POST /generate, GET /health, /health_generate, /get_model_info, /server_info (/get_server_info),
 * /get_weight_version, GET|POST /flush_cache, POST /update_weights_from_disk, /pause_generation,
 * /continue_generation, /abort_request; GET /v1/models, POST /v1/completions and
 * /v1/chat/completions (both streamed as server-sent events with stream=true). Client errors
 * are 400 with a message (SGLang's {"error": {"message"}}, OpenAI's error object under /v1).
 */
export async function startSGLangServer(
  engine: RolloutEngine,
  options: SGLangServerOptions = {},
): Promise<SGLangServer> {
  const host = options.host ?? '127.0.0.1';
  const maxBodyBytes = options.maxBodyBytes ?? 8 * 1024 * 1024;
  const ctx = serverContext(engine, options);
  const facts: ServerFacts = {
    host,
    port: options.port ?? 30000,
    version: options.version ?? 'unknown',
    ...(options.rankParamBytes ? { rankParamBytes: options.rankParamBytes } : {}),
  };
  const routes = apiRoutes(ctx, facts);

  async function route(req: IncomingMessage, res: ServerResponse): Promise<unknown> {
    const path = new URL(req.url ?? '/', 'http://x').pathname;
    const method = req.method ?? 'GET';
    checkAccess(req, path, options.apiKey);
    const found =
      routes.get(path) ?? (path.startsWith('/v1/models/') ? routes.get('/v1/models/') : undefined);
    if (!found)
      throw new HttpError(
        404,
        `no endpoint ${method} ${path}; see GET /server_info, POST /generate, POST /v1/chat/completions`,
      );
    if (!found.methods.includes(method))
      throw new HttpError(405, `${path} takes ${found.methods.join(' or ')}, got ${method}`);
    if (method === 'POST' && path.startsWith('/v1/')) requireJson(req);
    const body = method === 'GET' ? undefined : await readJson(req, maxBodyBytes);
    return found.handle({ req, res, path, body });
  }

  const server = createServer((req, res) => {
    route(req, res).then(
      (body) => {
        if (body !== undefined && !res.headersSent) sendJson(res, 200, body);
      },
      (e) => {
        if (res.headersSent || res.destroyed) return;
        const err = toHttpError(e);
        if (err.status >= 500 && !(e instanceof HttpError))
          options.onError?.(e as Error, `${req.method} ${req.url}`);
        sendJson(res, err.status, errorBody(err, req.url ?? '/'));
      },
    );
  });
  await new Promise<void>((resolve, reject) => {
    server.once('error', (e) =>
      reject(
        new RolloutError(
          'INVALID_ARGUMENT',
          `cannot listen on ${host}:${options.port ?? 30000}: ${e.message}`,
        ),
      ),
    );
    server.listen(options.port ?? 30000, host, () => resolve());
  });
  const port = (server.address() as AddressInfo).port;
  facts.port = port;
  return {
    url: `http://${host.includes(':') ? `[${host}]` : host}:${port}`,
    port,
    close: () =>
      new Promise<void>((resolve) => {
        ctx.registry.abort();
        server.closeAllConnections();
        server.close(() => resolve());
      }),
  };
}

function serverContext(engine: RolloutEngine, options: SGLangServerOptions): ServerContext {
  const { tokenizer, decode } = options;
  return {
    engine,
    tokenizer,
    vocabSize: options.vocabSize,
    contextLength: options.contextLength,
    modelPath: options.modelPath ?? null,
    servedModelName: options.servedModelName ?? options.modelPath ?? 'default',
    registry: new RequestRegistry(),
    weightVersion: 'default',
    decode: (ids, skipSpecialTokens) =>
      tokenizer ? tokenizer.decode(ids, { skipSpecialTokens }) : (decode?.(ids) ?? ''),
  };
}

function apiRoutes(ctx: ServerContext, facts: ServerFacts): Map<string, Route> {
  const get = (handle: Handler): Route => ({ methods: ['GET'], handle });
  const post = (handle: Handler): Route => ({ methods: ['POST'], handle });
  const info = get(() => serverInfo(ctx, facts));
  return new Map<string, Route>([
    ['/health', get(({ res }) => handleHealth(ctx, res))],
    ['/health_generate', get(({ res }) => handleHealthGenerate(ctx, res))],
    ['/get_model_info', get(() => modelInfo(ctx))],
    ['/server_info', info],
    ['/get_server_info', info],
    ['/get_weight_version', get(() => ({ weight_version: ctx.weightVersion }))],
    ['/flush_cache', { methods: ['GET', 'POST'], handle: ({ res }) => handleFlushCache(ctx, res) }],
    [
      '/generate',
      { methods: ['POST', 'PUT'], handle: ({ res, body }) => handleGenerate(ctx, res, body ?? {}) },
    ],
    ['/update_weights_from_disk', post(({ body }) => handleUpdateWeights(ctx, body ?? {}))],
    ['/pause_generation', post(({ body }) => handlePause(ctx, body))],
    ['/continue_generation', post(() => handleContinue(ctx))],
    ['/abort_request', post(({ res, body }) => handleAbort(ctx, res, body))],
    ['/load_lora_adapter', post(({ body }) => handleLoadLora(ctx, body))],
    ['/unload_lora_adapter', post(({ body }) => handleUnloadLora(ctx, body))],
    ['/v1/models', get(() => listModels(ctx))],
    [
      '/v1/models/',
      get(({ path }) => retrieveModel(ctx, decodeURIComponent(path.slice('/v1/models/'.length)))),
    ],
    ['/v1/completions', post(({ res, body }) => handleOpenAi(ctx, res, body, 'completion'))],
    ['/v1/chat/completions', post(({ res, body }) => handleOpenAi(ctx, res, body, 'chat'))],
  ]);
}

/** Errors of the engine, the models and the tokenizer: INVALID_ARGUMENT and TOKENIZER are the client's (400). */
function toHttpError(e: unknown): HttpError {
  if (e instanceof HttpError) return e;
  const code = (e as { code?: unknown })?.code;
  const message = (e as Error)?.message ?? String(e);
  if (code === 'INVALID_ARGUMENT' || code === 'TOKENIZER') return badRequest(message);
  return new HttpError(500, `internal error: ${message}`, { type: 'server_error' });
}

/** SGLang's {"error": {"message"}} on the native API; OpenAI's error object under /v1; or the error's own body. */
function errorBody(err: HttpError, url: string): unknown {
  if (err.detail.body !== undefined) return err.detail.body;
  if (!url.startsWith('/v1/')) return { error: { message: err.message } };
  const type = err.detail.type ?? (err.status >= 500 ? 'server_error' : 'invalid_request_error');
  return {
    error: {
      message: err.message,
      type,
      param: err.detail.param ?? null,
      code: err.detail.code ?? null,
    },
  };
}
