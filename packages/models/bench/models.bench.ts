// `pnpm bench models [--steps N] [--batch B] [--quick] [--recompute] [--unfused-decode] [--only
// train|generate|long]`: the tiny Llama (vocab 8192, hidden 256, 4 layers, 4 heads, MLP 768)
// trained with AdamW at batch 8 x 256 tokens, and sampled with the KV-cache generator (16 requests,
// 128 prompt + 128 new tokens), each next to the same model in PyTorch 1.13 CPU
// (scripts/bench_torch.py) measured in the same run. The long rows train one row of 8192 tokens per
// step (one sequence, causal) with the tiled attention kernel and with the unfused one (the model's
// attention wrapped so the [1, T, T] mask path runs), for peak RSS before and after. Every
// measurement runs in its own process so peak RSS belongs to it alone. Decode dispatches/step:
// kernel calls between two tokens of one request (tfjs kernels and direct addon calls, see
// kernelDispatches).
import { spawnSync } from 'node:child_process';
import { existsSync } from 'node:fs';
import { availableParallelism } from 'node:os';
import { join } from 'node:path';
import * as tf from '@tensorflow/tfjs-core';
import { adamWUpdate, initEngine, kernelDispatches } from '@rl2/engine';
import {
  createDecoderModel,
  createGenerator,
  initRandomModel,
  type ParamMap,
  tokenLogprobs,
} from '../src/index.js';
import { groupedQueryAttention } from '../src/layers/attention.js';

const SPEC = {
  family: 'llama',
  vocabSize: 8192,
  hiddenSize: 256,
  intermediateSize: 768,
  numLayers: 4,
  numHeads: 4,
  tieWordEmbeddings: false,
} as const;
const HERE = import.meta.dirname;
const ROOT = join(HERE, '..', '..', '..');
const args = process.argv.slice(2);
const flag = (name: string, fallback: number) => {
  const i = args.indexOf(name);
  return i >= 0 ? Number(args[i + 1]) : fallback;
};
const quick = args.includes('--quick');
/** `--recompute`: per-layer activation recomputation in the rl2 training step. */
const RECOMPUTE = args.includes('--recompute');
/** `--unfused-decode`: generation on the tfjs ops path instead of the fused native decode step. */
const UNFUSED = args.includes('--unfused-decode');
/** `--only train|generate|long`: measure one of the three. */
const ONLY = args.includes('--only') ? args[args.indexOf('--only') + 1] : undefined;
const STEPS = flag('--steps', quick ? 1 : 3);
/** `--batch B`: training rows of SEQ tokens per step (default 8). */
const BATCH = flag('--batch', 8);
/** `--seq T`: tokens per training row (default 256; the long rows use LONG_SEQ). */
const SEQ = flag('--seq', 256);
const LONG_SEQ = 8192;
/** `--unfused-attention`: training through the masked attention path instead of the tiled kernel. */
const UNFUSED_ATTENTION = args.includes('--unfused-attention');
const GEN = { batch: 16, prompt: 128, newTokens: quick ? 16 : 128 };

interface Measured {
  tokens_per_s: number;
  /** Tokens per second of process CPU time (user + system): robust to a busy machine. */
  tokens_per_cpu_s: number;
  peak_rss_mib: number;
  backend?: string;
  threads?: number;
  /** Median kernel dispatches between two generated tokens of one request. */
  dispatches_per_step?: number;
}

/**
 * AdamW (Loshchilov & Hutter 2019, https://arxiv.org/abs/1711.05101) through the engine's
 * `adamWUpdate` (one fused pass per parameter on native).
 */
function adamW(
  params: ParamMap,
  lr = 1e-4,
  beta1 = 0.9,
  beta2 = 0.999,
  eps = 1e-8,
  weightDecay = 0.01,
) {
  const m = new Map([...params].map(([k, v]) => [k, tf.variable(tf.zerosLike(v), false)]));
  const s = new Map([...params].map(([k, v]) => [k, tf.variable(tf.zerosLike(v), false)]));
  let step = 0;
  return (grads: Record<string, tf.Tensor>) => {
    step += 1;
    tf.tidy(() => {
      for (const [name, p] of params) {
        const mi = m.get(name)!;
        const si = s.get(name)!;
        const next = adamWUpdate(p, grads[p.name]!, mi, si, {
          lr,
          beta1,
          beta2,
          eps,
          weightDecay,
          step,
        });
        mi.assign(next.m);
        si.assign(next.v);
        p.assign(next.param);
      }
    });
  };
}

function randomIds(n: number, seed: number): number[] {
  let x = seed;
  return Array.from({ length: n }, () => {
    x = (Math.imul(x, 1664525) + 1013904223) >>> 0;
    return x % SPEC.vocabSize;
  });
}

async function childTrain(): Promise<Measured> {
  const engine = await initEngine({ backend: 'auto', logger: () => {} });
  const random = initRandomModel(SPEC, 0);
  const model = UNFUSED_ATTENTION
    ? createDecoderModel(random.config, random.params, {
        attention: (q, k, v, m) => groupedQueryAttention(q, k, v, m),
      })
    : random;
  const ids = randomIds(BATCH * (SEQ + 1), 1);
  const rows = Array.from({ length: BATCH }, (_, r) =>
    ids.slice(r * (SEQ + 1), (r + 1) * (SEQ + 1)),
  );
  const batch = {
    inputIds: rows.flatMap((r) => r.slice(0, SEQ)),
    positionIds: rows.flatMap(() => [...Array(SEQ).keys()]),
    rows: BATCH,
  };
  const targets = rows.flatMap((r) => r.slice(1));
  const params = [...model.params.values()];
  const step = adamW(model.params);
  const times: number[] = [];
  let cpu = 0;
  for (let i = 0; i <= STEPS; i++) {
    const t0 = performance.now();
    const c0 = process.cpuUsage();
    const { value, grads } = tf.variableGrads(() => {
      const { logprobs, entropy } = tokenLogprobs(model, batch, targets, { recompute: RECOMPUTE });
      entropy.dispose();
      return tf.neg(tf.mean(logprobs)) as tf.Scalar;
    }, params);
    step(grads);
    await value.data();
    tf.dispose([value, ...Object.values(grads)]);
    times.push(performance.now() - t0);
    const c = process.cpuUsage(c0);
    if (i > 0) cpu += (c.user + c.system) / 1e6;
  }
  const perStep = times.slice(1).reduce((a, b) => a + b, 0) / STEPS / 1000;
  return {
    tokens_per_s: (BATCH * SEQ) / perStep,
    tokens_per_cpu_s: (BATCH * SEQ * STEPS) / cpu,
    peak_rss_mib: process.resourceUsage().maxRSS / 1024,
    backend: engine.backend,
    threads: engine.threads,
  };
}

async function childGenerate(): Promise<Measured> {
  const engine = await initEngine({ backend: 'auto', logger: () => {} });
  const model = initRandomModel(SPEC, 0);
  const gen = createGenerator(model, { maxBatch: GEN.batch, fusedDecode: !UNFUSED });
  const marks: number[] = [];
  const t0 = performance.now();
  const c0 = process.cpuUsage();
  const results = await Promise.all(
    Array.from({ length: GEN.batch }, (_, i) =>
      gen.generate({
        inputIds: randomIds(GEN.prompt, 10 + i),
        maxNewTokens: GEN.newTokens,
        ignoreEos: true,
        seed: i,
        onToken: i === 0 ? () => marks.push(kernelDispatches()) : undefined,
      }),
    ),
  );
  const seconds = (performance.now() - t0) / 1000;
  const c = process.cpuUsage(c0);
  const tokens = results.reduce((a, r) => a + r.outputIds.length, 0);
  const perStep = marks
    .slice(1)
    .map((m, i) => m - marks[i]!)
    .sort((a, b) => a - b);
  return {
    dispatches_per_step: perStep[perStep.length >> 1],
    tokens_per_s: tokens / seconds,
    tokens_per_cpu_s: tokens / ((c.user + c.system) / 1e6),
    peak_rss_mib: process.resourceUsage().maxRSS / 1024,
    backend: engine.backend,
    threads: engine.threads,
  };
}

function runChild(cmd: string, argv: string[]): Measured | string {
  const r = spawnSync(cmd, argv, { encoding: 'utf8', maxBuffer: 1 << 24 });
  const line = r.stdout.trim().split('\n').at(-1) ?? '';
  try {
    return JSON.parse(line) as Measured;
  } catch {
    return `failed (exit ${r.status}): ${(r.stderr || r.stdout).trim().split('\n').slice(-3).join(' | ')}`;
  }
}

function torchBest(
  mode: string,
  extra: string[],
  threadCounts = [1, availableParallelism()],
): Measured | string {
  const python = ['/usr/bin/python3', 'python3'].find((p) => p === 'python3' || existsSync(p))!;
  const probe = spawnSync(python, ['-c', 'import torch'], { encoding: 'utf8' });
  if (probe.status !== 0) return 'python3-torch not installed';
  let best: Measured | string = 'no result';
  const threads = [...new Set(threadCounts)];
  for (const t of threads) {
    const r = runChild(python, [
      join(HERE, '..', 'scripts', 'bench_torch.py'),
      mode,
      '--threads',
      String(t),
      ...extra,
    ]);
    if (typeof r !== 'string' && (typeof best === 'string' || r.tokens_per_s > best.tokens_per_s))
      best = r;
    else if (typeof best === 'string') best = r;
  }
  return best;
}

async function main() {
  if (args[0] === '--child') {
    const res = args[1] === 'train' ? await childTrain() : await childGenerate();
    console.log(JSON.stringify(res));
    return;
  }
  const tsx = join(ROOT, 'node_modules', '.bin', 'tsx');
  const self = join(HERE, 'models.bench.ts');
  const common = [
    ...(quick ? ['--quick'] : []),
    ...(RECOMPUTE ? ['--recompute'] : []),
    ...(UNFUSED ? ['--unfused-decode'] : []),
  ];
  const pass = [
    '--steps',
    String(STEPS),
    '--batch',
    String(BATCH),
    '--seq',
    String(SEQ),
    ...common,
  ];
  const longPass = ['--steps', '1', '--batch', '1', '--seq', String(LONG_SEQ), ...common];
  console.log(
    `models bench: train ${BATCH}x${SEQ} tokens/step, ` +
      `AdamW${RECOMPUTE ? ', recompute' : ''}, ${STEPS} timed steps; generate ${GEN.batch} x ` +
      `(${GEN.prompt} prompt + ${GEN.newTokens} new)${UNFUSED ? ', unfused decode' : ''}; long: ` +
      `1x${LONG_SEQ}, 1 timed step`,
  );
  const skipped = 'not measured (--only)';
  const want = (what: string) => ONLY === undefined || ONLY === what;
  const ours = {
    train: want('train') ? runChild(tsx, [self, '--child', 'train', ...pass]) : skipped,
    gen: want('generate') ? runChild(tsx, [self, '--child', 'generate', ...pass]) : skipped,
    long: want('long') ? runChild(tsx, [self, '--child', 'train', ...longPass]) : skipped,
    longUnfused: want('long')
      ? runChild(tsx, [self, '--child', 'train', ...longPass, '--unfused-attention'])
      : skipped,
  };
  const torch = {
    train: want('train')
      ? torchBest('train', [
          '--steps',
          String(STEPS),
          '--batch',
          String(BATCH),
          '--seq',
          String(SEQ),
        ])
      : skipped,
    gen: want('generate')
      ? torchBest('generate', [
          '--batch',
          String(GEN.batch),
          '--prompt',
          String(GEN.prompt),
          '--new',
          String(GEN.newTokens),
        ])
      : skipped,
    // one run, all threads: its [1, 4, T, T] scores take GiBs per layer
    long: want('long')
      ? torchBest(
          'train',
          ['--steps', '1', '--batch', '1', '--seq', String(LONG_SEQ)],
          [availableParallelism()],
        )
      : skipped,
  };
  type Key = 'tokens_per_s' | 'tokens_per_cpu_s' | 'peak_rss_mib';
  const fmt = (m: Measured | string, key: Key) =>
    typeof m === 'string' ? 'n/a' : m[key].toFixed(key === 'peak_rss_mib' ? 0 : 1);
  const ratio = (a: Measured | string, b: Measured | string, key: Key) =>
    typeof a === 'string' || typeof b === 'string' ? 'n/a' : `${(a[key] / b[key]).toFixed(2)}x`;
  const who = (m: Measured | string) =>
    typeof m === 'string' ? m : `${m.backend ?? 'torch'}, ${m.threads} thr`;
  const rows = [
    [
      'train tokens/s',
      fmt(ours.train, 'tokens_per_s'),
      fmt(torch.train, 'tokens_per_s'),
      ratio(ours.train, torch.train, 'tokens_per_s'),
    ],
    [
      'train tokens/CPU-s',
      fmt(ours.train, 'tokens_per_cpu_s'),
      fmt(torch.train, 'tokens_per_cpu_s'),
      ratio(ours.train, torch.train, 'tokens_per_cpu_s'),
    ],
    [
      'train peak RSS MiB',
      fmt(ours.train, 'peak_rss_mib'),
      fmt(torch.train, 'peak_rss_mib'),
      ratio(ours.train, torch.train, 'peak_rss_mib'),
    ],
    [
      'generate tokens/s',
      fmt(ours.gen, 'tokens_per_s'),
      fmt(torch.gen, 'tokens_per_s'),
      ratio(ours.gen, torch.gen, 'tokens_per_s'),
    ],
    [
      'generate tokens/CPU-s',
      fmt(ours.gen, 'tokens_per_cpu_s'),
      fmt(torch.gen, 'tokens_per_cpu_s'),
      ratio(ours.gen, torch.gen, 'tokens_per_cpu_s'),
    ],
    [
      'generate peak RSS MiB',
      fmt(ours.gen, 'peak_rss_mib'),
      fmt(torch.gen, 'peak_rss_mib'),
      ratio(ours.gen, torch.gen, 'peak_rss_mib'),
    ],
    [
      `train 1x${LONG_SEQ} tokens/CPU-s, tiled attention`,
      fmt(ours.long, 'tokens_per_cpu_s'),
      fmt(torch.long, 'tokens_per_cpu_s'),
      ratio(ours.long, torch.long, 'tokens_per_cpu_s'),
    ],
    [
      `train 1x${LONG_SEQ} peak RSS MiB, tiled attention`,
      fmt(ours.long, 'peak_rss_mib'),
      fmt(torch.long, 'peak_rss_mib'),
      ratio(ours.long, torch.long, 'peak_rss_mib'),
    ],
    [
      `train 1x${LONG_SEQ} tokens/CPU-s, unfused attention`,
      fmt(ours.longUnfused, 'tokens_per_cpu_s'),
      fmt(torch.long, 'tokens_per_cpu_s'),
      ratio(ours.longUnfused, torch.long, 'tokens_per_cpu_s'),
    ],
    [
      `train 1x${LONG_SEQ} peak RSS MiB, unfused attention`,
      fmt(ours.longUnfused, 'peak_rss_mib'),
      fmt(torch.long, 'peak_rss_mib'),
      ratio(ours.longUnfused, torch.long, 'peak_rss_mib'),
    ],
    [
      'decode dispatches/step',
      typeof ours.gen === 'string' ? 'n/a' : String(ours.gen.dispatches_per_step ?? 'n/a'),
      'n/a',
      '',
    ],
  ];
  const head = [
    'metric',
    `rl2 (${who(ours.train)})`,
    `torch 1.13 (${who(torch.train)} / ${who(torch.gen)})`,
    'rl2 / torch',
  ];
  const widths = head.map((h, i) => Math.max(h.length, ...rows.map((r) => r[i]!.length)));
  const line = (r: string[]) => `| ${r.map((c, i) => c.padEnd(widths[i]!)).join(' | ')} |`;
  console.log([line(head), line(widths.map((w) => '-'.repeat(w))), ...rows.map(line)].join('\n'));
  for (const [k, v] of Object.entries({
    ...ours,
    torchTrain: torch.train,
    torchGen: torch.gen,
    torchLong: torch.long,
  }))
    if (typeof v === 'string' && v !== skipped) console.log(`${k}: ${v}`);
}

await main();
