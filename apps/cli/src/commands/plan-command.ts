import { existsSync, readFileSync, statSync } from 'node:fs';
import { join } from 'node:path';
import {
  type DecoderConfig,
  type PlanMemoryOptions,
  formatMemoryPlan,
  planMemory,
} from '@rl2/parallel';
import { TrainersError } from '@rl2/trainers';
import type { CAC } from 'cac';
import type { CliIo } from '../cli-io.js';

/** `rl2 plan` keys, their doc, and how to read the value. */
const PLAN_KEYS = {
  model: 'Hugging Face config.json, or a checkpoint folder holding one (required)',
  gpus: 'devices (processes) in the job (required)',
  tp: 'tensor-parallel size (default 1)',
  cp: 'context-parallel size (default 1)',
  ddp: 'replicas of the fsdp-sharded model (default 1: ZeRO-3 over all devices / tp)',
  max_length_per_device: 'tokens one device holds in a micro-batch (default 8192)',
  dtype: 'float32 (default) or bfloat16 (float32 master weights in the optimizer state)',
  gradient_checkpointing: 'true (default) keeps only layer inputs; false keeps every intermediate',
  tiled_attention:
    'true (default): attention in tiles, no T x T scores (also under cp); false plans the full score matrices',
  device_memory_gib: 'memory of one device in GiB: says whether the plan fits',
} as const;
type PlanKey = keyof typeof PLAN_KEYS;

/** The key list as `--help` shows it. */
export function planHelp(): string {
  const width = Math.max(...Object.keys(PLAN_KEYS).map((k) => k.length));
  return [
    'Keys:',
    ...Object.entries(PLAN_KEYS).map(([k, doc]) => `  ${k.padEnd(width)}  ${doc}`),
  ].join('\n');
}

function positiveInt(key: string, value: string): number {
  const n = Number(value);
  if (!Number.isInteger(n) || n < 1)
    throw new TrainersError(
      'INVALID_ARGUMENT',
      `rl2 plan: ${key}=${value} must be a positive integer`,
    );
  return n;
}

/** Reads `config.json` from a file or a checkpoint folder; errors name the path. */
function readDecoderConfig(path: string): DecoderConfig {
  const file = existsSync(path) && statSync(path).isDirectory() ? join(path, 'config.json') : path;
  if (!existsSync(file))
    throw new TrainersError(
      'INVALID_ARGUMENT',
      `rl2 plan: model=${path}: ${file} does not exist; pass a config.json or a folder holding one`,
    );
  try {
    return JSON.parse(readFileSync(file, 'utf8')) as DecoderConfig;
  } catch (err) {
    throw new TrainersError(
      'INVALID_ARGUMENT',
      `rl2 plan: model=${path}: ${file} is not valid JSON (${(err as Error).message})`,
    );
  }
}

/** Parses `key=value` words into planMemory options and the device size (bytes) if given. */
export function parsePlanArgs(words: readonly string[]): {
  options: PlanMemoryOptions;
  deviceBytes?: number;
} {
  const values: Partial<Record<PlanKey, string>> = {};
  for (const w of words) {
    const eq = w.indexOf('=');
    const key = eq < 0 ? w : w.slice(0, eq);
    if (eq < 0 || !(key in PLAN_KEYS)) {
      throw new TrainersError(
        'INVALID_ARGUMENT',
        `rl2 plan: "${w}" is not a key=value with a known key; keys are ${Object.keys(PLAN_KEYS).join(', ')}`,
      );
    }
    values[key as PlanKey] = w.slice(eq + 1);
  }
  if (!values.model)
    throw new TrainersError(
      'INVALID_ARGUMENT',
      'rl2 plan needs model=CONFIG.json (or a checkpoint folder)',
    );
  if (!values.gpus)
    throw new TrainersError('INVALID_ARGUMENT', 'rl2 plan needs gpus=N (devices in the job)');
  const int = (k: PlanKey) =>
    values[k] === undefined ? undefined : positiveInt(k, values[k] as string);
  const dtype = values.dtype ?? 'float32';
  if (dtype !== 'float32' && dtype !== 'bfloat16')
    throw new TrainersError(
      'INVALID_ARGUMENT',
      `rl2 plan: dtype=${dtype} must be float32 or bfloat16`,
    );
  const ckpt = values.gradient_checkpointing ?? 'true';
  if (ckpt !== 'true' && ckpt !== 'false')
    throw new TrainersError(
      'INVALID_ARGUMENT',
      `rl2 plan: gradient_checkpointing=${ckpt} must be true or false`,
    );
  const tiled = values.tiled_attention ?? 'true';
  if (tiled !== 'true' && tiled !== 'false')
    throw new TrainersError(
      'INVALID_ARGUMENT',
      `rl2 plan: tiled_attention=${tiled} must be true or false`,
    );
  let deviceBytes: number | undefined;
  if (values.device_memory_gib !== undefined) {
    const gib = Number(values.device_memory_gib);
    if (!(gib > 0))
      throw new TrainersError(
        'INVALID_ARGUMENT',
        `rl2 plan: device_memory_gib=${values.device_memory_gib} must be a positive number of GiB`,
      );
    deviceBytes = gib * 2 ** 30;
  }
  const options: PlanMemoryOptions = {
    config: readDecoderConfig(values.model),
    gpus: positiveInt('gpus', values.gpus),
    tp: int('tp'),
    cp: int('cp'),
    ddp: int('ddp'),
    maxLengthPerDevice: int('max_length_per_device'),
    dtype,
    gradientCheckpointing: ckpt === 'true',
    tiledAttention: tiled === 'true',
  };
  return { options, deviceBytes };
}

/** Registers `rl2 plan model=CONFIG gpus=N [tp=..] [cp=..] [ddp=..] ...`: per-device memory of a layout. */
export function registerPlanCommand(cli: CAC, io: CliIo): void {
  cli
    .command(
      'plan [...keys]',
      'per-device memory (parameters, gradients, optimizer state, activations) of a parallel layout',
    )
    .usage(
      'plan model=CONFIG.json gpus=N [tp=..] [cp=..] [ddp=..] [max_length_per_device=..] [dtype=..] [device_memory_gib=..]',
    )
    .example(
      'rl2 plan model=Qwen2.5-72B/config.json gpus=64 tp=8 cp=2 dtype=bfloat16 max_length_per_device=4096 device_memory_gib=80',
    )
    .action((keys: string[]) => {
      const { options, deviceBytes } = parsePlanArgs(keys);
      io.stdout.write(`${formatMemoryPlan(planMemory(options), deviceBytes)}\n`);
      return 0;
    });
}
