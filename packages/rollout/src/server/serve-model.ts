import { type Tokenizer, downloadProgressLines, loadTokenizer } from '@rl2/data';
import { type EngineBackendChoice, initEngine } from '@rl2/engine';
import { resolveModelDir } from '@rl2/models';
import { type CheckpointEngine, loadCheckpointEngine } from '../engine/checkpoint-engine.js';
import { RolloutError } from '../errors.js';
import { type SGLangServer, startSGLangServer } from './sglang-server.js';

/** Options of `serveModel` (`rl2 serve`). */
export interface ServeModelOptions {
  /** HF checkpoint folder with its tokenizer (a trained step-N/model works) or hub id (`Qwen/Qwen3-0.6B`, through the HF cache). */
  readonly model: string;
  /** Default 127.0.0.1: loopback only. */
  readonly host?: string;
  /** Default 30000; 0 picks a free port. */
  readonly port?: number;
  /** Largest request body, bytes (default 8 MiB; bigger requests get 413). */
  readonly maxBodyBytes?: number;
  /** Rows decoded together (default 16). */
  readonly maxBatch?: number;
  /** Base seed of requests without sampling_seed (default 0). */
  readonly seed?: number;
  /** Every endpoint but /health... then needs `Authorization: Bearer KEY`. */
  readonly apiKey?: string;
  /** The model id of the OpenAI API (default: the --model path). */
  readonly servedModelName?: string;
  /** Reported by /server_info. */
  readonly version?: string;
  readonly backend?: EngineBackendChoice;
  readonly threads?: number;
  readonly log?: (line: string) => void;
}

/**
 * `rl2 serve --model PATH`: the embedded engine (the @rl2/models KV-cache generator over an HF
 * checkpoint) behind SGLang's native HTTP API and the OpenAI API (/v1/models,
 * /v1/completions, /v1/chat/completions with the checkpoint's chat template). Close the
 * returned server to stop: requests in flight end with finish reason abort.
 */
export async function serveModel(
  options: ServeModelOptions,
): Promise<SGLangServer & { modelPath: string }> {
  const log = options.log ?? ((line: string) => process.stdout.write(`${line}\n`));
  await initEngine({
    backend: options.backend ?? 'auto',
    ...(options.threads ? { threads: options.threads } : {}),
    logger: log,
  });
  let tokenizer: Tokenizer;
  let engine: CheckpointEngine;
  try {
    // a hub id (Qwen/Qwen3-0.6B) is downloaded into the HF cache first, with progress lines
    const dir = await resolveModelDir(options.model, { onProgress: downloadProgressLines(log) });
    const loaded = await loadTokenizer(dir);
    tokenizer = loaded;
    engine = await loadCheckpointEngine(dir, {
      decode: (ids) => loaded.decode(ids),
      maxBatch: options.maxBatch,
      seed: options.seed,
    });
  } catch (err) {
    throw new RolloutError(
      'INVALID_ARGUMENT',
      `--model ${options.model}: ${(err as Error).message}`,
    );
  }
  const server = await startSGLangServer(engine, {
    host: options.host ?? '127.0.0.1',
    port: options.port ?? 30000,
    maxBodyBytes: options.maxBodyBytes,
    tokenizer,
    modelPath: options.model,
    servedModelName: options.servedModelName,
    vocabSize: engine.modelConfig.vocabSize,
    contextLength: engine.modelConfig.maxPositionEmbeddings,
    apiKey: options.apiKey,
    version: options.version,
    onError: (e, request) => log(`rl2 serve: ${request} failed: ${e.stack ?? e.message}`),
  }).catch(async (err: unknown) => {
    await engine.close();
    throw err;
  });
  const auth = options.apiKey ? ', API key required' : '';
  log(
    `serving ${options.model} at ${server.url} (SGLang API: POST /generate; OpenAI API: ${server.url}/v1${auth})`,
  );
  return {
    url: server.url,
    port: server.port,
    modelPath: options.model,
    async close() {
      await server.close();
      await engine.close();
    },
  };
}
