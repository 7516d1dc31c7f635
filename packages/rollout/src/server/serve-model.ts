import { downloadProgressLines, loadTokenizer } from '@rl2/data';
import { type EngineBackendChoice, initEngine, type WeightDtype } from '@rl2/engine';
import {
  checkTokenizerFits,
  GENERATION_WEIGHT_DTYPES,
  readModelConfig,
  resolveModelDir,
} from '@rl2/models';
import type { ProcessGroup } from '@rl2/parallel';
import { type CheckpointEngine, loadCheckpointEngine } from '../inference/checkpoint-engine.js';
import { loadTensorParallelEngine } from '../inference/tensor-parallel-engine.js';
import { followTensorParallelEngine } from '../inference/tensor-parallel-follower.js';
import { loadLoraCheckpointEngine } from '../inference/lora-engine.js';
import { RolloutError } from '../errors.js';
import { type SGLangServer, startSGLangServer } from './sglang-server.js';

/** Options of `serveModel` (`rl2 serve`). */
export interface ServeModelOptions {
  /** HF checkpoint folder with its tokenizer (a trained step-N/model works) or hub id (`Qwen/Qwen3-0.6B`, through the HF cache). */
  readonly model: string;
  /**
   * The local folder of `model` when it is already resolved (`rl2 serve --tp N` downloads a
   * hub id once, in the launching command, and hands its ranks the snapshot folder); `model`
   * then only names it (/server_info, the OpenAI model id).
   */
  readonly modelDir?: string;
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
  /** Weight dtype while generating (`--dtype`; default 'auto': bfloat16 for a bfloat16 checkpoint, else float32). */
  readonly weightDtype?: WeightDtype | 'auto';
  /** Every endpoint but /health... then needs `Authorization: Bearer KEY`. */
  readonly apiKey?: string;
  /** The model id of the OpenAI API (default: the --model path). */
  readonly servedModelName?: string;
  /** Reported by /server_info. */
  readonly version?: string;
  readonly backend?: EngineBackendChoice;
  readonly threads?: number;
  readonly log?: (line: string) => void;
  /**
   * `rl2 serve --tp N`: the tensor-parallel group (group rank 0 serves, the others run
   * {@link followServeModel}); each rank holds only its shards.
   */
  readonly tp?: ProcessGroup;
  /** LoRA adapters to serve on the base by name (`--lora NAME=DIR`, as SGLang's `--lora-paths`): PEFT folders. */
  readonly loras?: readonly { name: string; path: string }[];
  /** Serve LoRA adapters loaded later by POST /load_lora_adapter, also without `loras` (`--enable-lora`). */
  readonly enableLora?: boolean;
  /** With `tp`: the lead's idle heartbeat period (default: a quarter of the collective timeout, at most 10 s). */
  readonly heartbeatMs?: number;
}

/**
 * `rl2 serve --dtype` (named `key` in the error): auto or a generation weight dtype
 * (float32, bfloat16, float16), else an error naming the key and the values it takes.
 */
export function parseServeDtype(value: string, key: string): WeightDtype | 'auto' {
  if (value === 'auto' || (GENERATION_WEIGHT_DTYPES as readonly string[]).includes(value))
    return value as WeightDtype | 'auto';
  throw new RolloutError(
    'INVALID_ARGUMENT',
    `${key} ${value}: use one of auto, ${GENERATION_WEIGHT_DTYPES.join(', ')}`,
  );
}

/** A running `rl2 serve`; `failed` settles only if its tensor-parallel group loses a rank. */
export type ServedModel = SGLangServer & { modelPath: string; failed: Promise<Error> };

/**
 * The local folder `rl2 serve --model NAME_OR_DIR` loads: the folder itself, or a hub id
 * (`Qwen/Qwen3-0.6B`) downloaded into the HF cache (HF_HOME/HF_HUB_CACHE, HF_ENDPOINT,
 * HF_TOKEN, HF_HUB_OFFLINE) with progress lines on `log`; its snapshot folder.
 */
export function resolveServeModel(model: string, log: (line: string) => void): Promise<string> {
  return resolveModelDir(model, { onProgress: downloadProgressLines(log) });
}

async function startEngine(options: ServeModelOptions, log: (line: string) => void) {
  const dir = options.modelDir ?? (await resolveServeModel(options.model, log));
  const tokenizer = await loadTokenizer(dir);
  checkTokenizerFits(tokenizer.vocabSize, await readModelConfig(dir), {
    tokenizerDir: dir,
    modelDir: dir,
  });
  let onFailure: (e: Error) => void = () => {};
  const failed = new Promise<Error>((resolve) => {
    onFailure = resolve;
  });
  const common = {
    decode: (ids: readonly number[]) => tokenizer.decode(ids),
    maxBatch: options.maxBatch,
    seed: options.seed,
    ...(options.weightDtype ? { weightDtype: options.weightDtype } : {}),
  };
  const lora = options.enableLora || (options.loras?.length ?? 0) > 0;
  const engine: CheckpointEngine =
    options.tp && options.tp.size > 1
      ? await loadTensorParallelEngine(dir, options.tp, {
          ...common,
          log,
          onFailure,
          ...(options.heartbeatMs ? { heartbeatMs: options.heartbeatMs } : {}),
          // each rank holds its part of every adapter (split as its base layers)
          ...(lora ? { loras: options.loras ?? [] } : {}),
        })
      : lora
        ? await loadLoraCheckpointEngine(dir, options.loras ?? [], common)
        : await loadCheckpointEngine(dir, common);
  return { tokenizer, engine, failed };
}

/**
 * A follower of `rl2 serve --tp N` (tp group ranks 1..N-1): loads its shards of `options.model`
 * and runs the forwards of the lead's requests, until the lead stops (resolves) or is lost
 * (throws).
 */
export async function followServeModel(
  options: Pick<ServeModelOptions, 'model' | 'modelDir' | 'backend' | 'threads' | 'log'> & {
    tp: ProcessGroup;
  },
): Promise<void> {
  const log = options.log ?? ((line: string) => process.stderr.write(`${line}\n`));
  // its own engine line: each rank starts its own backend (on webgpu, its own adapter)
  await initEngine({
    backend: options.backend ?? 'auto',
    ...(options.threads ? { threads: options.threads } : {}),
    logger: log,
  });
  const dir = options.modelDir ?? (await resolveModelDir(options.model, { onProgress: () => {} }));
  await followTensorParallelEngine(dir, options.tp, log);
}

/**
 * `rl2 serve --model PATH`: the embedded engine (the @rl2/models KV-cache generator over an HF
 * checkpoint) behind SGLang's native HTTP API and the OpenAI API (/v1/models,
 * /v1/completions, /v1/chat/completions with the checkpoint's chat template). Close the
 * returned server to stop: requests in flight end with finish reason abort.
 */
export async function serveModel(options: ServeModelOptions): Promise<ServedModel> {
  const log = options.log ?? ((line: string) => process.stdout.write(`${line}\n`));
  await initEngine({
    backend: options.backend ?? 'auto',
    ...(options.threads ? { threads: options.threads } : {}),
    logger: log,
  });
  let started: Awaited<ReturnType<typeof startEngine>>;
  try {
    started = await startEngine(options, log);
  } catch (err) {
    throw new RolloutError(
      'INVALID_ARGUMENT',
      `--model ${options.model}: ${(err as Error).message}`,
    );
  }
  const { tokenizer, engine, failed } = started;
  log(`weights: ${engine.weightDtype} while generating (--dtype ${options.weightDtype ?? 'auto'})`);
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
    rankParamBytes: () => engine.rankParamBytes,
    onError: (e, request) => log(`rl2 serve: ${request} failed: ${e.stack ?? e.message}`),
  }).catch(async (err: unknown) => {
    await engine.close();
    throw err;
  });
  const auth = options.apiKey ? ', API key required' : '';
  const tp =
    options.tp && options.tp.size > 1 ? `, tensor parallel over ${options.tp.size} ranks` : '';
  log(
    `serving ${options.model} at ${server.url} (SGLang API: POST /generate; OpenAI API: ${server.url}/v1${auth}${tp})`,
  );
  log(`parameter bytes per rank: ${engine.rankParamBytes.join(', ')}`);
  return {
    url: server.url,
    port: server.port,
    modelPath: options.model,
    failed,
    async close() {
      await server.close();
      await engine.close();
    },
  };
}
