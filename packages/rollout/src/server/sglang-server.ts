import { type IncomingMessage, type ServerResponse, createServer } from 'node:http';
import type { AddressInfo } from 'node:net';
import type { FinishReason, GenerateResult, RolloutEngine, SamplingParams } from '../engine/rollout-engine.js';
import { RolloutError } from '../errors.js';

export interface SGLangServerOptions {
  /** Interface to bind. Default '127.0.0.1' (loopback only); pass '0.0.0.0' deliberately to expose it. */
  host?: string;
  /** Port; 0 picks a free one. Default 30000. */
  port?: number;
  /** Largest request body accepted, bytes; bigger ones get HTTP 413. Default 8 MiB. */
  maxBodyBytes?: number;
  /** Turns ids into text for the `text` fields of the answer; '' without it. */
  decode?: (ids: readonly number[]) => string;
  /** Reported by GET /get_model_info. */
  modelPath?: string;
}

export interface SGLangServer {
  /** Base URL, e.g. http://127.0.0.1:30000. */
  url: string;
  port: number;
  close(): Promise<void>;
}

class HttpError extends Error {
  constructor(
    readonly status: number,
    message: string,
  ) {
    super(message);
  }
}

/**
 * Serves any RolloutEngine over the subset of SGLang's native HTTP API that RL2 uses:
 * POST /generate (token ids in, meta_info.output_token_logprobs out), GET /health,
 * /flush_cache, POST /update_weights_from_disk {model_path}, /pause_generation,
 * /continue_generation, GET /get_model_info. Errors are JSON: {error: {message, code}}.
 */
export async function startSGLangServer(engine: RolloutEngine, options: SGLangServerOptions = {}): Promise<SGLangServer> {
  const host = options.host ?? '127.0.0.1';
  const maxBodyBytes = options.maxBodyBytes ?? 8 * 1024 * 1024;
  const decode = options.decode ?? (() => '');
  let nextId = 0;

  async function route(req: IncomingMessage, res: ServerResponse): Promise<unknown> {
    const path = new URL(req.url ?? '/', 'http://x').pathname;
    const method = req.method ?? 'GET';
    const needPost = () => {
      if (method !== 'POST') throw new HttpError(405, `${path} takes POST, got ${method}`);
    };
    switch (path) {
      case '/health':
      case '/health_generate': {
        const h = await engine.health();
        if (!h.ok) throw new HttpError(503, `engine unhealthy: ${h.backends.map((b) => `${b.name}: ${b.error ?? 'down'}`).join('; ')}`);
        return {};
      }
      case '/get_model_info':
        return { model_path: options.modelPath ?? null, is_generation: true };
      case '/flush_cache':
        await engine.flushCache();
        return { success: true, message: 'Cache flushed.' };
      case '/pause_generation':
        needPost();
        await readJson(req, maxBodyBytes);
        await engine.pause();
        return { success: true };
      case '/continue_generation':
        needPost();
        await readJson(req, maxBodyBytes);
        await engine.continue();
        return { success: true };
      case '/update_weights_from_disk': {
        needPost();
        const body = (await readJson(req, maxBodyBytes)) as { model_path?: unknown };
        if (typeof body.model_path !== 'string' || body.model_path === '') {
          throw new HttpError(400, 'update_weights_from_disk needs {"model_path": "<checkpoint folder>"}');
        }
        try {
          await engine.updateWeights(body.model_path);
        } catch (e) {
          return { success: false, message: (e as Error).message };
        }
        return { success: true, message: `loaded ${body.model_path}` };
      }
      case '/generate': {
        needPost();
        const body = (await readJson(req, maxBodyBytes)) as Record<string, unknown>;
        const batch = parseInputIds(body.input_ids);
        if (body.stream) throw new HttpError(400, 'stream is not supported by this server: send stream=false');
        const sampling = parseSampling(body.sampling_params);
        const abort = new AbortController();
        res.on('close', () => {
          if (!res.writableFinished) abort.abort();
        });
        const answers = await Promise.all(
          batch.ids.map(async (inputIds) => {
            const out = await engine.generate({ inputIds, sampling, signal: abort.signal });
            nextId += 1;
            return toSGLangAnswer(out, inputIds.length, String(nextId), decode);
          }),
        );
        return batch.single ? answers[0] : answers;
      }
      default:
        throw new HttpError(404, `no endpoint ${method} ${path}`);
    }
  }

  const server = createServer((req, res) => {
    route(req, res).then(
      (body) => send(res, 200, body),
      (e) => {
        const status = e instanceof HttpError ? e.status : e instanceof RolloutError && e.code === 'INVALID_ARGUMENT' ? 400 : 500;
        if (!res.headersSent && !res.destroyed) send(res, status, { error: { message: (e as Error).message, code: status } });
      },
    );
  });
  await new Promise<void>((resolve, reject) => {
    server.once('error', (e) => reject(new RolloutError('INVALID_ARGUMENT', `cannot listen on ${host}:${options.port ?? 30000}: ${e.message}`)));
    server.listen(options.port ?? 30000, host, () => resolve());
  });
  const port = (server.address() as AddressInfo).port;
  return {
    url: `http://${host.includes(':') ? `[${host}]` : host}:${port}`,
    port,
    close: () =>
      new Promise<void>((resolve) => {
        server.closeAllConnections();
        server.close(() => resolve());
      }),
  };
}

function send(res: ServerResponse, status: number, body: unknown): void {
  const text = JSON.stringify(body);
  res.writeHead(status, { 'content-type': 'application/json', 'content-length': Buffer.byteLength(text) });
  res.end(text);
}

async function readJson(req: IncomingMessage, maxBytes: number): Promise<unknown> {
  const declared = Number(req.headers['content-length'] ?? 0);
  if (declared > maxBytes) {
    req.resume();
    throw new HttpError(413, `request body of ${declared} bytes exceeds the limit of ${maxBytes} bytes (raise maxBodyBytes)`);
  }
  const chunks: Buffer[] = [];
  let size = 0;
  for await (const chunk of req) {
    size += (chunk as Buffer).length;
    if (size > maxBytes) throw new HttpError(413, `request body exceeds the limit of ${maxBytes} bytes (raise maxBodyBytes)`);
    chunks.push(chunk as Buffer);
  }
  if (size === 0) return {};
  try {
    const parsed = JSON.parse(Buffer.concat(chunks).toString('utf8'));
    if (parsed === null || typeof parsed !== 'object') throw new Error('not an object');
    return parsed;
  } catch (e) {
    throw new HttpError(400, `request body is not a JSON object: ${(e as Error).message}`);
  }
}

function parseInputIds(x: unknown): { ids: number[][]; single: boolean } {
  const isIds = (a: unknown): a is number[] => Array.isArray(a) && a.every((v) => Number.isInteger(v) && v >= 0);
  if (isIds(x) && x.length > 0) return { ids: [x], single: true };
  if (Array.isArray(x) && x.length > 0 && x.every((a) => isIds(a) && a.length > 0)) return { ids: x as number[][], single: false };
  throw new HttpError(400, 'generate needs input_ids: a non-empty array of token ids (or an array of them); this server is token-in only, send ids not text');
}

const samplingKeys = ['temperature', 'top_p', 'top_k', 'max_new_tokens', 'stop', 'stop_token_ids', 'no_stop_trim', 'ignore_eos', 'sampling_seed'] as const;

function parseSampling(x: unknown): SamplingParams {
  if (x === undefined) return {};
  if (x === null || typeof x !== 'object' || Array.isArray(x)) throw new HttpError(400, 'sampling_params must be an object');
  const src = x as Record<string, unknown>;
  const out: Record<string, unknown> = {};
  for (const key of samplingKeys) if (src[key] !== undefined && src[key] !== null) out[key] = src[key];
  for (const key of ['temperature', 'top_p', 'top_k', 'max_new_tokens', 'sampling_seed']) {
    if (out[key] !== undefined && typeof out[key] !== 'number') throw new HttpError(400, `sampling_params.${key} must be a number, got ${JSON.stringify(out[key])}`);
  }
  if (typeof out.stop === 'string') out.stop = [out.stop];
  return out as SamplingParams;
}

function toSGLangAnswer(out: GenerateResult, promptTokens: number, id: string, decode: (ids: number[]) => string) {
  const finishReason: { type: FinishReason; matched?: number; length?: number; message?: string } = { type: out.finishReason };
  if (out.finishReason === 'stop' && out.tokenIds.length > 0) finishReason.matched = out.tokenIds[out.tokenIds.length - 1];
  if (out.finishReason === 'length') finishReason.length = out.tokenIds.length;
  if (out.finishReason === 'abort') finishReason.message = 'aborted';
  return {
    text: decode(out.tokenIds),
    output_ids: out.tokenIds,
    meta_info: {
      id,
      prompt_tokens: promptTokens,
      completion_tokens: out.tokenIds.length,
      finish_reason: finishReason,
      output_token_logprobs: out.tokenIds.map((t, i) => [out.logprobs[i], t, null]),
    },
  };
}
