import { downloadProgressLines } from '@rl2/data';
import { type EngineBackendChoice, initEngine } from '@rl2/engine';
import { resolveModelDir } from '@rl2/models';
import { type SGLangServer, loadCheckpointEngine, startSGLangServer } from '@rl2/rollout';
import { TrainersError } from '../errors.js';
import { openTokenizer } from '../run/run-setup.js';

/** Options of `serveModel` (`rl2 serve`). */
export interface ServeModelOptions {
  /** HF checkpoint folder (a trained step-N/model works) or hub id (`Qwen/Qwen3-0.6B`, through the HF cache). */
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
  readonly backend?: EngineBackendChoice;
  readonly threads?: number;
  readonly log?: (line: string) => void;
}

/**
 * `rl2 serve --model PATH`: the embedded engine (the @rl2/models KV-cache generator over an HF
 * checkpoint) behind the SGLang-compatible HTTP API of @rl2/rollout (/generate, /health,
 * /flush_cache, /update_weights_from_disk, pause/continue). Close the returned server to stop.
 */
export async function serveModel(options: ServeModelOptions): Promise<SGLangServer & { modelPath: string }> {
  const log = options.log ?? ((line: string) => process.stdout.write(`${line}\n`));
  await initEngine({ backend: options.backend ?? 'auto', ...(options.threads ? { threads: options.threads } : {}), logger: log });
  let engine: Awaited<ReturnType<typeof loadCheckpointEngine>>;
  let decode: (ids: readonly number[]) => string;
  try {
    // a hub id (Qwen/Qwen3-0.6B) is downloaded into the HF cache first, with progress lines
    const dir = await resolveModelDir(options.model, { onProgress: downloadProgressLines(log) });
    const tokenizer = await openTokenizer(dir, '--model');
    decode = (ids) => tokenizer.decode(ids);
    engine = await loadCheckpointEngine(dir, { decode, maxBatch: options.maxBatch, seed: options.seed });
  } catch (err) {
    if (err instanceof TrainersError) throw err;
    throw new TrainersError('CHECKPOINT', `--model ${options.model}: ${(err as Error).message}`);
  }
  const server = await startSGLangServer(engine, {
    host: options.host ?? '127.0.0.1',
    port: options.port ?? 30000,
    maxBodyBytes: options.maxBodyBytes,
    decode,
    modelPath: options.model,
  });
  log(`serving ${options.model} at ${server.url} (SGLang API: POST /generate, GET /health, POST /update_weights_from_disk)`);
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
