import { type ProcessGroup, readLaunchEnv } from '@rl2/parallel';
import { RolloutError, followServeModel, parseServeDtype, serveModel } from '@rl2/rollout';
import type { CAC } from 'cac';
import type { CliIo } from '../cli-io.js';
import { SERVE_MODEL_DIR_ENV, joinServeWorld, launchServeRanks } from './serve-ranks.js';

/**
 * Registers `rl2 serve --model PATH`: the embedded engine behind SGLang's native API and the
 * OpenAI API (loopback unless --host says otherwise) until Ctrl-C or SIGTERM, which stop it
 * (requests in flight end with finish reason abort; nothing is saved).
 */
export function registerServeCommand(cli: CAC, io: CliIo, version: string): void {
  cli
    .command(
      'serve',
      "serve a checkpoint over SGLang's API (/generate, /update_weights_from_disk) and the OpenAI API (/v1/chat/completions)",
    )
    .option(
      '--model <dir>',
      'Hugging Face checkpoint folder (e.g. runs/addition-grpo/step-30/model) or hub id ' +
        '(e.g. Qwen/Qwen3-0.6B, downloaded into the HF cache)',
    )
    .option('--host <host>', 'interface to bind; 0.0.0.0 exposes it beyond this machine', {
      default: '127.0.0.1',
    })
    .option('--port <n>', 'port (0: any free port)', { default: 30000 })
    .option(
      '--api-key <key>',
      'require "Authorization: Bearer KEY" on every endpoint but /health (default: RL2_API_KEY)',
    )
    .option('--served-model-name <name>', 'model id of the OpenAI API (default: the --model path)')
    .option('--max-body-bytes <n>', 'largest request body; bigger requests get HTTP 413', {
      default: 8 * 1024 * 1024,
    })
    .option('--max-batch <n>', 'requests decoded together', { default: 16 })
    .option('--seed <n>', 'base sampling seed of requests without sampling_seed', { default: 0 })
    .option(
      '--dtype <dtype>',
      "weights' element type while decoding: auto (bfloat16 for a bfloat16 checkpoint, else float32), float32, bfloat16, float16",
      { default: 'auto' },
    )
    .option('--threads <n>', 'compute threads (default: RL2_THREADS or all cores)')
    .option(
      '--tp <n>',
      'tensor parallelism: N processes, each holding 1/N of the weights and KV cache; rank 0 serves HTTP',
      { default: 1 },
    )
    .option(
      '--lora <name=dir>',
      'serve the PEFT LoRA adapter folder DIR on --model as NAME (requests pick it with lora_path, ' +
        'as SGLang serves LoRA paths); repeat for several',
    )
    .option(
      '--enable-lora',
      'serve adapters loaded later by POST /load_lora_adapter (implied by --lora)',
    )
    .example('rl2 serve --model runs/addition-grpo/step-30/model --port 30000')
    .example('rl2 serve --model Qwen/Qwen3-0.6B --lora sft=runs/sft/step-100/adapter')
    .example('rl2 serve --model runs/addition-grpo/step-30/model --tp 2')
    .action(async (flags: Record<string, string | number | undefined>) => {
      if (!flags.model)
        throw new RolloutError(
          'INVALID_ARGUMENT',
          'rl2 serve needs --model DIR (a Hugging Face checkpoint folder) or a hub id such as Qwen/Qwen3-0.6B',
        );
      const tp = Number(flags.tp);
      if (!Number.isInteger(tp) || tp < 1)
        throw new RolloutError(
          'INVALID_ARGUMENT',
          `rl2 serve --tp ${flags.tp}: must be an integer >= 1`,
        );
      if (tp === 1) return serveUntilStopped(flags, io, version);
      // typed by a user: start the ranks; run by the launcher: be one of them
      if (readLaunchEnv().worldSize === 1) return launchServeRanks(tp, String(flags.model), io);
      // started by that command: --model is resolved already (a hub id downloaded once)
      const modelDir = process.env[SERVE_MODEL_DIR_ENV] || undefined;
      const world = await joinServeWorld(tp);
      try {
        if (world.rank === 0)
          return await serveUntilStopped(flags, io, version, { group: world, modelDir });
        await followServeModel({
          model: String(flags.model),
          ...(modelDir ? { modelDir } : {}),
          tp: world,
          ...(flags.threads === undefined ? {} : { threads: Number(flags.threads) }),
          log: (line) => io.stderr.write(`${line}\n`),
        });
        return 0;
      } finally {
        await world.close();
      }
    });
}

/**
 * `rl2 serve` on one process, or as rank 0 of `--tp N` (`tp.group`; `tp.modelDir`: --model
 * resolved by the launching command): serves until Ctrl-C, SIGTERM or a lost rank.
 */
async function serveUntilStopped(
  flags: Record<string, string | number | undefined>,
  io: CliIo,
  version: string,
  tp?: { group: ProcessGroup; modelDir: string | undefined },
): Promise<number> {
  const apiKey = flags.apiKey === undefined ? process.env.RL2_API_KEY : String(flags.apiKey);
  const loras = parseLoraFlags(flags.lora);
  const server = await serveModel({
    ...(loras.length > 0 ? { loras } : {}),
    ...(flags.enableLora ? { enableLora: true } : {}),
    model: String(flags.model),
    host: String(flags.host),
    port: Number(flags.port),
    maxBodyBytes: Number(flags.maxBodyBytes),
    maxBatch: Number(flags.maxBatch),
    seed: Number(flags.seed),
    weightDtype: parseServeDtype(String(flags.dtype ?? 'auto'), 'rl2 serve --dtype'),
    version,
    ...(apiKey ? { apiKey } : {}),
    ...(flags.servedModelName === undefined
      ? {}
      : { servedModelName: String(flags.servedModelName) }),
    ...(flags.threads === undefined ? {} : { threads: Number(flags.threads) }),
    log: (line) => io.stdout.write(`${line}\n`),
    ...(tp ? { tp: tp.group } : {}),
    ...(tp?.modelDir ? { modelDir: tp.modelDir } : {}),
  });
  io.stdout.write(`ready: ${server.url} (Ctrl-C to stop)\n`);
  const failure = await Promise.race([untilStopped(io.signal), server.failed]);
  await server.close();
  if (failure) {
    io.stderr.write(`rl2 serve: ${failure.message}\n`);
    return 1;
  }
  io.stdout.write('stopped\n');
  return 0;
}

/** `--lora NAME=DIR` (given once or several times) as adapters by name; a bad one names the flag. */
export function parseLoraFlags(value: unknown): { name: string; path: string }[] {
  if (value === undefined) return [];
  const out: { name: string; path: string }[] = [];
  for (const v of [value].flat()) {
    const text = String(v);
    const eq = text.indexOf('=');
    if (eq <= 0 || eq === text.length - 1)
      throw new RolloutError(
        'INVALID_ARGUMENT',
        `rl2 serve --lora ${text}: write NAME=DIR, e.g. --lora sft=runs/sft/step-100/adapter`,
      );
    const name = text.slice(0, eq);
    if (out.some((a) => a.name === name))
      throw new RolloutError(
        'INVALID_ARGUMENT',
        `rl2 serve --lora: the name ${name} is given twice`,
      );
    out.push({ name, path: text.slice(eq + 1) });
  }
  return out;
}

/** Resolves when the CLI's signal aborts (Ctrl-C or SIGTERM), or, without one, on SIGINT or SIGTERM. */
function untilStopped(signal: AbortSignal | undefined): Promise<void> {
  return new Promise<void>((resolve) => {
    if (signal) {
      if (signal.aborted) resolve();
      else signal.addEventListener('abort', () => resolve(), { once: true });
      return;
    }
    const stop = () => {
      process.off('SIGTERM', stop);
      process.off('SIGINT', stop);
      resolve();
    };
    process.once('SIGTERM', stop);
    process.once('SIGINT', stop);
  });
}
