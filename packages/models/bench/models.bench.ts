// `pnpm bench models [--rounds R] [--steps N] [--batch B[,B...]] [--quick] [--recompute]
// [--unfused-decode] [--only train|generate|long]`: the tiny Llama (vocab 8192, hidden 256, 4
// layers, 4 heads, MLP 768) trained with AdamW at B x 256 tokens (default batches 8 and 32) as the
// trainers train (bench/train-step.ts: freed memory kept, in-place AdamW, a V8 collection per
// step), and sampled with the KV-cache generator (16 requests, 128 prompt + 128 new tokens), each
// next to the same model in PyTorch 1.13 CPU (scripts/bench_torch.py, 1 and all threads) measured
// in the same run. Each side runs R times (default 3), alternating (the order flips each round);
// the table gives the median [min-max] of the rounds, torch's figure is the better of its thread
// counts per metric, and the ratio is of the medians, then each round's. The long rows (one round)
// train one row of 8192 tokens per step (one sequence, causal) with the tiled attention kernel and
// with the unfused one (the model's attention wrapped so the [1, T, T] mask path runs), for peak
// RSS before and after. Every measurement runs in its own process so peak RSS belongs to it alone.
// Decode dispatches/step: kernel calls between two tokens of one request (tfjs kernels and direct
// addon calls, see kernelDispatches).
import { spawnSync } from 'node:child_process';
import { existsSync } from 'node:fs';
import { availableParallelism } from 'node:os';
import { join } from 'node:path';
import { createGenerator, initRandomModel } from '../src/index.js';
import { initEngine, kernelDispatches } from '@rl2/engine';
import {
  alternate,
  type MetricKey,
  type Measured,
  median,
  summary,
  uptime,
  values,
} from './bench-rounds.js';
import { makeTrainStep, randomIds, SPEC } from './train-step.js';

const HERE = import.meta.dirname;
const ROOT = join(HERE, '..', '..', '..');
const args = process.argv.slice(2);
const option = (name: string) => (args.includes(name) ? args[args.indexOf(name) + 1] : undefined);
const flag = (name: string, fallback: number) => Number(option(name) ?? fallback);
const quick = args.includes('--quick');
/** `--recompute`: per-layer activation recomputation in the rl2 training step. */
const RECOMPUTE = args.includes('--recompute');
/** `--unfused-decode`: generation on the tfjs ops path instead of the fused native decode step. */
const UNFUSED = args.includes('--unfused-decode');
/** `--only train|generate|long`: measure one of the three. */
const ONLY = option('--only');
const STEPS = flag('--steps', quick ? 1 : 3);
/** `--rounds R`: measurements of each side, alternating (default 3, 1 with --quick). */
const ROUNDS = flag('--rounds', quick ? 1 : 3);
/** `--batch B[,B...]`: training rows of SEQ tokens per step (default 8,32; a child takes one). */
const BATCHES = (option('--batch') ?? (quick ? '8' : '8,32')).split(',').map(Number);
/** `--seq T`: tokens per training row (default 256; the long rows use LONG_SEQ). */
const SEQ = flag('--seq', 256);
const LONG_SEQ = 8192;
/** `--unfused-attention`: training through the masked attention path instead of the tiled kernel. */
const UNFUSED_ATTENTION = args.includes('--unfused-attention');
const GEN = { batch: 16, prompt: 128, newTokens: quick ? 16 : 128 };
const TORCH_THREADS = [...new Set([1, availableParallelism()])];

async function childTrain(): Promise<Measured> {
  const engine = await initEngine({ backend: 'auto', training: true, logger: () => {} });
  const batch = BATCHES[0]!;
  const step = makeTrainStep({
    batch,
    seq: SEQ,
    recompute: RECOMPUTE,
    unfusedAttention: UNFUSED_ATTENTION,
  });
  const times: number[] = [];
  let cpu = 0;
  for (let i = 0; i <= STEPS; i++) {
    const t0 = performance.now();
    const c0 = process.cpuUsage();
    await step();
    times.push(performance.now() - t0);
    const c = process.cpuUsage(c0);
    if (i > 0) cpu += (c.user + c.system) / 1e6;
  }
  const perStep = times.slice(1).reduce((a, b) => a + b, 0) / STEPS / 1000;
  return {
    tokens_per_s: (batch * SEQ) / perStep,
    tokens_per_cpu_s: (batch * SEQ * STEPS) / cpu,
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

const PYTHON = ['/usr/bin/python3', 'python3'].find((p) => p === 'python3' || existsSync(p))!;
const hasTorch = spawnSync(PYTHON, ['-c', 'import torch'], { encoding: 'utf8' }).status === 0;

/** One torch process per thread count; `python3-torch not installed` without torch. */
function torchRuns(mode: string, extra: string[], threads: number[]): (Measured | string)[] {
  const script = join(HERE, '..', 'scripts', 'bench_torch.py');
  return threads.map((t) =>
    hasTorch
      ? runChild(PYTHON, [script, mode, '--threads', String(t), ...extra])
      : 'python3-torch not installed',
  );
}

/** A row's measurements: rl2's runs and torch's runs per thread count, one of each per round. */
interface Compared {
  label: string;
  ours: (Measured | string)[];
  torch: Map<number, (Measured | string)[]>;
}

function compare(
  label: string,
  rounds: number,
  ours: () => Measured | string,
  torch: () => (Measured | string)[],
  threads: number[],
): Compared {
  const [o, t] = alternate<(Measured | string)[]>(rounds, [() => [ours()], torch]);
  return {
    label,
    ours: o!.map((r) => r[0]!),
    torch: new Map(threads.map((th, i) => [th, t!.map((r) => r[i]!)])),
  };
}

/** Torch's best thread count for a metric by median (max for rates, min for RSS). */
function torchBest(c: Compared, key: MetricKey): { threads: number; xs: number[] } | undefined {
  const lower = key === 'peak_rss_mib';
  let best: { threads: number; xs: number[] } | undefined;
  for (const [threads, runs] of c.torch) {
    const xs = values(runs, key);
    if (xs.length === 0) continue;
    const better = lower
      ? median(xs) < median(best?.xs ?? [Infinity])
      : median(xs) > median(best?.xs ?? [-Infinity]);
    if (!best || better) best = { threads, xs };
  }
  return best;
}

function row(c: Compared, key: MetricKey, what: string): string[] {
  const digits = key === 'peak_rss_mib' ? 0 : 1;
  const ours = values(c.ours, key);
  const best = torchBest(c, key);
  const perRound = c.ours.map((o, r) => {
    const round = [...c.torch.values()].flatMap((runs) => values([runs[r]!], key));
    if (typeof o === 'string' || round.length === 0) return 'n/a';
    const t = key === 'peak_rss_mib' ? Math.min(...round) : Math.max(...round);
    return `${(o[key] / t).toFixed(2)}`;
  });
  const ratio =
    ours.length && best
      ? `${(median(ours) / median(best.xs)).toFixed(2)}x (${perRound.join(', ')})`
      : 'n/a';
  return [
    `${c.label} ${what}`,
    summary(ours, digits),
    best ? `${summary(best.xs, digits)} (${best.threads} thr)` : 'n/a',
    ratio,
  ];
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
  const steps = ['--steps', String(STEPS)];
  const trainArgs = (b: number, seq = SEQ) => ['--batch', String(b), '--seq', String(seq)];
  const start = uptime();
  console.log(
    `models bench: train ${BATCHES.join(', ')} x ${SEQ} tokens/step, AdamW${RECOMPUTE ? ', recompute' : ''}, ` +
      `${STEPS} timed steps; generate ${GEN.batch} x (${GEN.prompt} prompt + ${GEN.newTokens} new)` +
      `${UNFUSED ? ', unfused decode' : ''}; long: 1x${LONG_SEQ}, 1 timed step, 1 round; ` +
      `${ROUNDS} alternating rounds of each side; torch at ${TORCH_THREADS.join(' and ')} threads`,
  );
  console.log(`start: ${start}`);
  const want = (what: string) => ONLY === undefined || ONLY === what;
  const rows: Compared[] = [];
  let gen: Compared | undefined;
  if (want('train'))
    for (const b of BATCHES)
      rows.push(
        compare(
          `train ${b}x${SEQ}`,
          ROUNDS,
          () => runChild(tsx, [self, '--child', 'train', ...steps, ...trainArgs(b), ...common]),
          () => torchRuns('train', [...steps, ...trainArgs(b)], TORCH_THREADS),
          TORCH_THREADS,
        ),
      );
  if (want('generate')) {
    const torchGen = [
      '--batch',
      String(GEN.batch),
      '--prompt',
      String(GEN.prompt),
      '--new',
      String(GEN.newTokens),
    ];
    gen = compare(
      `generate ${GEN.batch}x(${GEN.prompt}+${GEN.newTokens})`,
      ROUNDS,
      () => runChild(tsx, [self, '--child', 'generate', ...common]),
      () => torchRuns('generate', torchGen, TORCH_THREADS),
      TORCH_THREADS,
    );
    rows.push(gen);
  }
  if (want('long')) {
    const long = ['--steps', '1', ...trainArgs(1, LONG_SEQ)];
    // one torch run, all threads: its [1, 4, T, T] scores take GiBs per layer
    const all = [availableParallelism()];
    const torchLong = torchRuns('train', long, all);
    const ours = (extra: string[]) =>
      runChild(tsx, [self, '--child', 'train', ...long, ...common, ...extra]);
    rows.push({
      label: `train 1x${LONG_SEQ} tiled attention`,
      ours: [ours([])],
      torch: new Map([[all[0]!, torchLong]]),
    });
    rows.push({
      label: `train 1x${LONG_SEQ} unfused attention`,
      ours: [ours(['--unfused-attention'])],
      torch: new Map([[all[0]!, torchLong]]),
    });
  }
  const table = rows.flatMap((c) => [
    row(c, 'tokens_per_s', 'tokens/s'),
    row(c, 'tokens_per_cpu_s', 'tokens/CPU-s'),
    row(c, 'peak_rss_mib', 'peak RSS MiB'),
  ]);
  if (gen) {
    const d = gen.ours.flatMap((m) =>
      typeof m === 'string' || m.dispatches_per_step === undefined ? [] : [m.dispatches_per_step],
    );
    table.push(['decode dispatches/step', summary(d, 0), 'n/a', '']);
  }
  const first = rows[0]?.ours.find((m): m is Measured => typeof m !== 'string');
  const head = [
    'metric (median [min-max] of the rounds)',
    `rl2 (${first ? `${first.backend}, ${first.threads} thr` : 'n/a'})`,
    'torch 1.13 (best thread count)',
    'rl2 / torch (each round)',
  ];
  const widths = head.map((h, i) => Math.max(h.length, ...table.map((r) => r[i]!.length)));
  const line = (r: string[]) => `| ${r.map((c, i) => c.padEnd(widths[i]!)).join(' | ')} |`;
  console.log([line(head), line(widths.map((w) => '-'.repeat(w))), ...table.map(line)].join('\n'));
  for (const c of rows)
    for (const m of [...c.ours, ...[...c.torch.values()].flat()])
      if (typeof m === 'string') console.log(`${c.label}: ${m}`);
  console.log(`end: ${uptime()}`);
}

await main();
