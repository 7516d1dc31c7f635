import { RolloutError } from '../errors.js';
import { type BackoffOptions, backoffDelays, sleep } from './backoff.js';
import type {
  EngineHealth,
  GenerateRequest,
  GenerateResult,
  RolloutEngine,
} from './rollout-engine.js';
import { errorBodyMessage, parseGenerateResponse } from './sglang-response.js';
import { type BalanceStrategy, UrlBalancer } from './url-balancer.js';

/** Options of the SGLang HTTP client. */
export interface SGLangEngineOptions {
  /** A router URL, or several server URLs to balance over. */
  urls: string | string[];
  /** Server URLs that control calls (weights, cache, pause) go to; default `urls`. Set it when `urls` is a router. */
  workerUrls?: string[];
  balance?: BalanceStrategy;
  /** Per-attempt timeout of /generate, ms. Default 600000. */
  generateTimeoutMs?: number;
  /** Per-attempt timeout of the other endpoints, ms. Default 60000. */
  controlTimeoutMs?: number;
  backoff?: BackoffOptions;
  /** Sent as `Authorization: Bearer KEY` on every call (servers started with --api-key). */
  apiKey?: string;
  /** Injected for tests; defaults to the global fetch. */
  fetch?: typeof fetch;
}

/** The SGLang client: a RolloutEngine that can also load LoRA adapters on its servers. */
export interface SGLangEngine extends RolloutEngine {
  /**
   * POST /load_lora_adapter {lora_name, lora_path} on every worker; from then on requests that
   * name no adapter generate with this one (rl2 ppo's adapter sync with actor.lora.rank > 0).
   */
  loadLoraAdapter(name: string, path: string): Promise<void>;
  /** POST /unload_lora_adapter {lora_name} on every worker. */
  unloadLoraAdapter(name: string): Promise<void>;
}

interface AttemptError {
  url: string;
  error: RolloutError;
  retryable: boolean;
}

/**
 * RolloutEngine over SGLang's native HTTP API (token in, token out):
 * POST /generate {input_ids, sampling_params, return_logprob: true} and read
 * meta_info.output_token_logprobs / meta_info.finish_reason.type.
 * Connection errors, timeouts and 5xx answers are retried with exponential backoff on the next
 * URL; 4xx answers are not. When every attempt fails the error names each URL and its failure.
 */
export function createSGLangEngine(options: SGLangEngineOptions): SGLangEngine {
  const urls = typeof options.urls === 'string' ? [options.urls] : options.urls;
  const balancer = new UrlBalancer(urls, options.balance);
  const workers = new UrlBalancer(options.workerUrls ?? urls);
  const delays = backoffDelays(options.backoff);
  const doFetch = options.fetch ?? fetch;
  const generateTimeoutMs = options.generateTimeoutMs ?? 600_000;
  const controlTimeoutMs = options.controlTimeoutMs ?? 60_000;
  let defaultLora: string | undefined;

  /** One HTTP call with a timeout; classifies failures into retryable or not. */
  async function attempt(
    url: string,
    path: string,
    body: unknown,
    timeoutMs: number,
    signal?: AbortSignal,
  ): Promise<unknown> {
    const timeout = AbortSignal.timeout(timeoutMs);
    const combined = signal ? AbortSignal.any([signal, timeout]) : timeout;
    const headers: Record<string, string> = {};
    if (body !== undefined) headers['content-type'] = 'application/json';
    if (options.apiKey) headers.authorization = `Bearer ${options.apiKey}`;
    let res: Response;
    try {
      res = await doFetch(`${url}${path}`, {
        method: body === undefined ? 'GET' : 'POST',
        headers,
        body: body === undefined ? undefined : JSON.stringify(body),
        signal: combined,
      });
    } catch (cause) {
      throw classifyFetchError(url, path, cause, timeoutMs, signal);
    }
    const text = await res.text().catch(() => '');
    if (!res.ok) {
      const hint = res.status === 401 || res.status === 403 ? ` (${authHint(options.apiKey)})` : '';
      const detail = errorBodyMessage(text);
      const err = Object.assign(
        new RolloutError(
          'ENGINE_HTTP',
          `${url}${path} answered HTTP ${res.status}: ${detail}${hint}`,
        ),
        { status: res.status, detail },
      );
      throw {
        url,
        error: err,
        retryable: res.status >= 500 || res.status === 429,
      } satisfies AttemptError;
    }
    if (text === '') return {};
    try {
      return JSON.parse(text);
    } catch {
      // SGLang answers some control endpoints with plain text.
      return { text };
    }
  }

  /** Calls `path` with retries and backoff, moving to another URL after each failure. */
  async function call(
    pool: UrlBalancer,
    path: string,
    body: unknown,
    timeoutMs: number,
    signal?: AbortSignal,
    fixedUrl?: number,
  ): Promise<unknown> {
    const failures: AttemptError[] = [];
    const failed = new Set<number>();
    for (let k = 0; k <= delays.length; k += 1) {
      const i = fixedUrl ?? pool.pick(failed);
      pool.acquire(i);
      try {
        return await attempt(pool.urls[i], path, body, timeoutMs, signal);
      } catch (e) {
        const f = toAttemptError(pool.urls[i], e);
        if (!f.retryable) throw f.error;
        failures.push(f);
        failed.add(i);
      } finally {
        pool.release(i);
      }
      if (k < delays.length) {
        try {
          await sleep(delays[k], signal);
        } catch {
          throw new RolloutError('ENGINE_ABORTED', `request to ${path} was aborted by the caller`);
        }
      }
    }
    const allUnreachable = failures.every((f) => f.error.code === 'ENGINE_UNREACHABLE');
    const detail = failures.map((f, k) => `  attempt ${k + 1}: ${f.error.message}`).join('\n');
    throw new RolloutError(
      allUnreachable ? 'ENGINE_UNREACHABLE' : failures[failures.length - 1].error.code,
      `${path} failed after ${failures.length} attempt(s) on ${[...new Set(failures.map((f) => f.url))].join(', ')}:\n${detail}\n` +
        'Check that the SGLang server (or `rl2 serve`) is running at that URL, or fix the URL (rollout.server_urls of rl2 ppo).',
      { cause: failures[failures.length - 1].error },
    );
  }

  /** Sends a control call to every worker URL. */
  async function broadcast(path: string, body: unknown): Promise<unknown[]> {
    return Promise.all(
      workers.urls.map((_, i) => call(workers, path, body, controlTimeoutMs, undefined, i)),
    );
  }

  return {
    async generate(request: GenerateRequest): Promise<GenerateResult> {
      const payload = {
        input_ids: request.inputIds,
        sampling_params: dropUndefined(request.sampling),
        return_logprob: true,
        ...(request.topLogprobs ? { top_logprobs_num: request.topLogprobs } : {}),
        ...((request.lora ?? defaultLora) ? { lora_path: request.lora ?? defaultLora } : {}),
      };
      const body = await call(balancer, '/generate', payload, generateTimeoutMs, request.signal);
      return parseGenerateResponse(body, balancer.urls.join(', '));
    },
    async updateWeights(modelPath: string): Promise<void> {
      // SGLang answers a failed load with HTTP 400 {success: false, message}; older servers with 200.
      const answers = await Promise.all(
        workers.urls.map((url, i) =>
          call(
            workers,
            '/update_weights_from_disk',
            { model_path: modelPath },
            controlTimeoutMs,
            undefined,
            i,
          ).catch((e: RolloutError & { status?: number; detail?: string }) => {
            if (e.status === undefined) throw e;
            throw new RolloutError(
              e.code,
              `${url}/update_weights_from_disk refused "${modelPath}" (HTTP ${e.status}): ${e.detail}`,
              { cause: e },
            );
          }),
        ),
      );
      answers.forEach((a, i) => {
        if ((a as { success?: boolean }).success === false) {
          const msg = (a as { message?: string }).message ?? '';
          throw new RolloutError(
            'ENGINE_HTTP',
            `${workers.urls[i]}/update_weights_from_disk refused "${modelPath}": ${msg}`,
          );
        }
      });
    },
    async flushCache(): Promise<void> {
      await broadcast('/flush_cache', {});
    },
    async loadLoraAdapter(name: string, path: string): Promise<void> {
      await broadcast('/load_lora_adapter', { lora_name: name, lora_path: path });
      defaultLora = name;
    },
    async unloadLoraAdapter(name: string): Promise<void> {
      await broadcast('/unload_lora_adapter', { lora_name: name });
      if (defaultLora === name) defaultLora = undefined;
    },
    async pause(): Promise<void> {
      await broadcast('/pause_generation', {});
    },
    async continue(): Promise<void> {
      await broadcast('/continue_generation', {});
    },
    async health(): Promise<EngineHealth> {
      const all = [...new Set([...balancer.urls, ...workers.urls])];
      const pool = new UrlBalancer(all);
      const backends = await Promise.all(
        all.map(async (url, i) => {
          try {
            await attempt(pool.urls[i], '/health', undefined, controlTimeoutMs);
            return { name: url, ok: true };
          } catch (e) {
            return { name: url, ok: false, error: toAttemptError(url, e).error.message };
          }
        }),
      );
      return { ok: backends.every((b) => b.ok), backends };
    },
  };
}

function dropUndefined<T extends object>(o: T): Partial<T> {
  return Object.fromEntries(Object.entries(o).filter(([, v]) => v !== undefined)) as Partial<T>;
}

function authHint(apiKey: string | undefined): string {
  return apiKey
    ? 'the server refused this API key: check RL2_API_KEY or the apiKey option'
    : 'the server needs an API key: set RL2_API_KEY (or the apiKey option)';
}

function toAttemptError(url: string, e: unknown): AttemptError {
  if (
    e &&
    typeof e === 'object' &&
    'error' in e &&
    (e as AttemptError).error instanceof RolloutError
  )
    return e as AttemptError;
  if (e instanceof RolloutError)
    return {
      url,
      error: e,
      retryable: e.code === 'ENGINE_UNREACHABLE' || e.code === 'ENGINE_TIMEOUT',
    };
  return { url, error: new RolloutError('ENGINE_HTTP', `${url}: ${String(e)}`), retryable: false };
}

function classifyFetchError(
  url: string,
  path: string,
  cause: unknown,
  timeoutMs: number,
  signal?: AbortSignal,
): AttemptError {
  if (signal?.aborted) {
    return {
      url,
      error: new RolloutError('ENGINE_ABORTED', `${url}${path} was aborted by the caller`),
      retryable: false,
    };
  }
  const name = (cause as { name?: string })?.name;
  if (name === 'TimeoutError' || name === 'AbortError') {
    return {
      url,
      error: new RolloutError(
        'ENGINE_TIMEOUT',
        `${url}${path} did not answer within ${timeoutMs} ms (raise the engine timeout)`,
      ),
      retryable: true,
    };
  }
  const code =
    (cause as { cause?: { code?: string } })?.cause?.code ??
    (cause as { code?: string })?.code ??
    String(cause);
  return {
    url,
    error: new RolloutError('ENGINE_UNREACHABLE', `cannot reach ${url}${path} (${code})`),
    retryable: true,
  };
}
