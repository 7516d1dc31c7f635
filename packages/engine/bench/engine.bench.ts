// `pnpm bench engine [--threads N] [--rounds R] [--no-cpu] [--no-matmul] [--no-batched] [--no-train] [--no-torch]
// [--batch B] [--steps S] [--composite-loss]`
// GFLOP/s of matMul shapes from a tiny Llama step (plain, A^T B, A B^T, batched attention) on
// every backend this machine has, next to numpy/OpenBLAS sgemm in the same run; batched
// [4, 512, 256] x [4, 256, 512] (forward and its gradient's two products) against the plain 512^3
// product on native, R alternating rounds (default 3), medians; then the training-step throughput
// of a tiny Llama (vocab 8192, hidden 256, 4 layers, 4 heads, MLP 768). The load (uptime) is
// printed at the start and the end.
import { spawnSync } from 'node:child_process';
import { availableParallelism } from 'node:os';
import { fileURLToPath } from 'node:url';
import * as tf from '@tensorflow/tfjs-core';
import { type EngineBackend, initEngine } from '../src/index.js';
import { tinyLlamaStep } from './engine-tiny-llama.js';
import { numberOption } from './bench-option.js';
import { batchedVsPlain } from './batched-vs-plain.js';

const argv = process.argv.slice(2);
const flag = (name: string) => argv.includes(`--${name}`);
const threads = numberOption('threads', availableParallelism());
const minSeconds = 0.4;

interface Shape {
  label: string;
  kind: 'plain' | 'transposed' | 'batched';
  a: number[];
  b: number[];
  ta: boolean;
  tb: boolean;
}
// T = 8 x 256 tokens, hidden 256, MLP 768, 4 heads of 64: the matMuls of one training step.
const SHAPES: Shape[] = [
  {
    label: 'x W         [2048,256] x [256,768]',
    kind: 'plain',
    a: [2048, 256],
    b: [256, 768],
    ta: false,
    tb: false,
  },
  {
    label: 'dW = x^T g  [2048,256]^T x [2048,768]',
    kind: 'transposed',
    a: [2048, 256],
    b: [2048, 768],
    ta: true,
    tb: false,
  },
  {
    label: 'dx = g W^T  [2048,768] x [256,768]^T',
    kind: 'transposed',
    a: [2048, 768],
    b: [256, 768],
    ta: false,
    tb: true,
  },
  {
    label: 'x W (3D)    [8,256,256] x [256,768]',
    kind: 'batched',
    a: [8, 256, 256],
    b: [256, 768],
    ta: false,
    tb: false,
  },
  {
    label: 'Q K^T       [32,256,64] x [32,256,64]^T',
    kind: 'batched',
    a: [32, 256, 64],
    b: [32, 256, 64],
    ta: false,
    tb: true,
  },
  {
    label: 'P V         [32,256,256] x [32,256,64]',
    kind: 'batched',
    a: [32, 256, 256],
    b: [32, 256, 64],
    ta: false,
    tb: false,
  },
];

function flopsOf(s: Shape): number {
  const m = s.ta ? s.a[s.a.length - 1] : s.a[s.a.length - 2];
  const k = s.ta ? s.a[s.a.length - 2] : s.a[s.a.length - 1];
  const n = s.tb ? s.b[s.b.length - 2] : s.b[s.b.length - 1];
  const batch = Math.max(
    s.a.slice(0, -2).reduce((x, y) => x * y, 1),
    s.b.slice(0, -2).reduce((x, y) => x * y, 1),
  );
  return 2 * m * n * k * batch;
}

/** GFLOP/s from the fastest of the timed calls (the machine is shared: the best call is the kernel's speed). */
function gflops(s: Shape, budget: number): number {
  const a = tf.randomNormal(s.a);
  const b = tf.randomNormal(s.b);
  tf.matMul(a, b, s.ta, s.tb).dispose(); // warm-up
  let reps = 0;
  let best = Number.POSITIVE_INFINITY;
  const t0 = performance.now();
  do {
    const t = performance.now();
    const c = tf.matMul(a, b, s.ta, s.tb);
    c.dataSync();
    best = Math.min(best, (performance.now() - t) / 1000);
    c.dispose();
    reps++;
  } while ((performance.now() - t0) / 1000 < budget || reps < (budget > 0 ? 3 : 1));
  tf.dispose([a, b]);
  return flopsOf(s) / best / 1e9;
}

function numpyFigures(): number[] | undefined {
  const script = fileURLToPath(new URL('../scripts/engine-numpy-sgemm.py', import.meta.url));
  const payload = JSON.stringify(SHAPES.map(({ a, b, ta, tb }) => ({ a, b, ta, tb })));
  // Debian's python3-numpy links the system OpenBLAS (the library the addon uses) first.
  for (const py of ['/usr/bin/python3', 'python3']) {
    const r = spawnSync(py, [script, payload, String(minSeconds)], {
      encoding: 'utf8',
      env: {
        ...process.env,
        OPENBLAS_NUM_THREADS: String(threads),
        OMP_NUM_THREADS: String(threads),
      },
    });
    if (r.status === 0) return JSON.parse(r.stdout.trim().split('\n').pop() ?? '[]') as number[];
  }
  return undefined;
}

interface TorchStep {
  tokensPerSecond: number;
  secondsPerStep: number;
  bestSecondsPerStep: number;
  peakRssMiB: number;
  blas: string;
}

function torchStep(batch: number, steps: number): TorchStep | undefined {
  const script = fileURLToPath(new URL('../scripts/engine-torch-tiny-llama.py', import.meta.url));
  for (const py of ['/usr/bin/python3', 'python3']) {
    const r = spawnSync(py, [script, String(batch), '256', String(steps), String(threads)], {
      encoding: 'utf8',
    });
    if (r.status === 0) return JSON.parse(r.stdout.trim().split('\n').pop() ?? '{}') as TorchStep;
  }
  return undefined;
}

const fmt = (x: number | undefined, digits = 1) =>
  x === undefined || !Number.isFinite(x) ? '-' : x.toFixed(digits);
const pad = (s: string, n: number) => s.padEnd(n);
const W = 52;

const uptime = () =>
  spawnSync('uptime', { encoding: 'utf8' }).stdout?.trim() ?? 'uptime unavailable';

async function main(): Promise<void> {
  console.log(`start: ${uptime()}`);
  const lines: string[] = [];
  const backends: EngineBackend[] = flag('no-matmul')
    ? []
    : ['native', 'wasm', ...(flag('no-cpu') ? [] : ['cpu' as const])];
  const table = new Map<string, number[]>();
  for (const backend of backends) {
    const info = await initEngine({ backend, threads, logger: (l) => lines.push(l), env: {} });
    if (info.backend !== backend) continue; // not available here (the line says why)
    // the pure cpu backend runs ~0.4 GFLOP/s: one timed call per shape is enough
    table.set(
      backend,
      SHAPES.map((s) => gflops(s, backend === 'cpu' ? 0 : minSeconds)),
    );
  }
  const numpy = flag('no-matmul') ? undefined : numpyFigures();
  if (numpy) table.set('numpy', numpy);
  for (const l of lines) console.log(l);
  if (!flag('no-matmul')) printTable(table, numpy);
  if (!flag('no-batched')) {
    await initEngine({ backend: 'native', threads, logger: () => {}, env: {} });
    if (tf.getBackend() === 'native') batchedVsPlain(numberOption('rounds', 3), threads);
  }
  if (!flag('no-train')) await trainStep();
  console.log(`\nend: ${uptime()}`);
}

function printTable(table: Map<string, number[]>, numpy: number[] | undefined): void {
  console.log(
    `\nmatMul GFLOP/s, ${threads} thread(s) (numpy/OpenBLAS sgemm measured in the same run${numpy ? '' : ': python3-numpy not found'})`,
  );
  const names = [...table.keys()];
  // the speedup over stock tfjs-backend-wasm and tfjs-backend-cpu, then native's own shape balance and numpy
  const ratios = ['native/wasm', 'native/cpu', 'native/plain', 'native/numpy'];
  console.log(
    `${pad('shape', W)}${names.map((n) => pad(n, 9)).join('')}${
      table.has('native')
        ? ratios
            .map((n) => pad(n, 14))
            .join('')
            .trimEnd()
        : ''
    }`,
  );
  const native = table.get('native');
  const over = (other: number[] | undefined, i: number) =>
    native && other ? native[i] / other[i] : undefined;
  SHAPES.forEach((s, i) => {
    const cells = names.map((n) => pad(fmt(table.get(n)?.[i]), 9)).join('');
    const speedups = [over(table.get('wasm'), i), over(table.get('cpu'), i)]
      .map((x) => pad(x === undefined ? '-' : `${fmt(x, x < 10 ? 1 : 0)}x`, 14))
      .join('');
    const extra = native
      ? `${speedups}${pad(fmt(native[i] / native[0], 2), 14)}${fmt(over(numpy, i), 2)}`
      : '';
    console.log(`${pad(`${s.kind.padEnd(11)}${s.label}`, W)}${cells}${extra}`);
  });
  if (native) {
    const worst = Math.min(...native.slice(1).map((g) => g / native[0]));
    console.log(
      `\nworst transposed/batched vs plain 2D on native: ${fmt(worst, 2)}x (goal: >= ${fmt(1 / 1.5, 2)}, i.e. within 1.5x)`,
    );
  }
}

async function trainStep(): Promise<void> {
  const batch = numberOption('batch', 8);
  await initEngine({ backend: 'native', threads, logger: () => {}, env: {} });
  const steps = numberOption('steps', 3);
  const r = await tinyLlamaStep({ batch, seq: 256, steps, compositeLoss: flag('composite-loss') });
  const torch = flag('no-torch') ? undefined : torchStep(batch, steps);
  console.log(
    `\ntiny Llama training step (vocab 8192, hidden 256, 4 layers, 4 heads, MLP 768, Adam), batch ${batch}x256, ${threads} thread(s):`,
  );
  console.log('  tokens/s from the fastest of the timed steps (after one warm-up), on both sides');
  console.log(
    `  rl2 ${tf.getBackend()}: ${fmt(r.tokensPerSecond, 0)} tokens/s ` +
      `(best ${fmt(r.bestSecondsPerStep, 2)} s/step, mean ${fmt(r.secondsPerStep, 2)}, ` +
      `loss ${fmt(r.losses[0], 3)} -> ${fmt(r.losses[r.losses.length - 1], 3)}, ${r.params} ` +
      `params, peak RSS ${fmt(r.peakRssMiB, 0)} MiB)`,
  );
  if (torch) {
    console.log(
      `  torch ${torch.blas}: ${fmt(torch.tokensPerSecond, 0)} tokens/s ` +
        `(best ${fmt(torch.bestSecondsPerStep, 2)} s/step, ` +
        `mean ${fmt(torch.secondsPerStep, 2)}, peak RSS ${fmt(torch.peakRssMiB, 0)} MiB)`,
    );
    console.log(
      `  rl2/torch: ${fmt(r.tokensPerSecond / torch.tokensPerSecond, 2)}x throughput, ${fmt(r.peakRssMiB / torch.peakRssMiB, 2)}x peak RSS`,
    );
  }
}

await main();
