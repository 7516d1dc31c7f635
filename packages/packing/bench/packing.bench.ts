/**
 * `pnpm bench packing [--n 100000] [--k 64] [--rl2 /path/to/RL2]`
 *
 * Karmarkar-Karp partition of n seeded log-normal lengths (exp(N(6, 1.2)), long-tailed) into k
 * bins: time and max/mean load for @rl2/packing, next to RL2's Python partitioner on the same
 * lengths in the same run. RL2 is located by --rl2 or $RL2_PATH (the checkout folder holding
 * RL2/, or the seqlen_balance.py file itself); python3 is $PYTHON or `python3`. Without them
 * the Python column is skipped with a notice.
 */
import { spawnSync } from 'node:child_process';
import { existsSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { karmarkarKarp } from '../src/index.js';
import { lognormalLengths } from '../test/random.js';

function arg(name: string, fallback?: string): string | undefined {
  const i = process.argv.indexOf(`--${name}`);
  return i >= 0 ? process.argv[i + 1] : fallback;
}

const n = Number(arg('n', '100000'));
const k = Number(arg('k', '64'));
const repeats = 5;
const lengths = lognormalLengths(n, 2024, 6, 1.2);
const total = lengths.reduce((a, b) => a + b, 0);
const mean = total / k;

interface Row {
  name: string;
  /** wall-clock milliseconds */
  ms: number;
  /** process CPU milliseconds (user + system): steadier than wall time on a shared machine */
  cpuMs: number;
  maxLoad: number;
  minLoad: number;
  bins?: number[][];
}

function measureTs(): Row[] {
  const cpu = () => {
    const u = process.cpuUsage();
    return (u.user + u.system) / 1000;
  };
  const c0 = performance.now();
  const u0 = cpu();
  const cold = karmarkarKarp(lengths, k); // first call: includes JIT warm-up
  const coldCpu = cpu() - u0;
  const coldMs = performance.now() - c0;
  const times: number[] = [];
  const cpuTimes: number[] = [];
  let result = karmarkarKarp(lengths, k);
  for (let r = 0; r < repeats; r++) {
    const t0 = performance.now();
    const v0 = cpu();
    result = karmarkarKarp(lengths, k);
    cpuTimes.push(cpu() - v0);
    times.push(performance.now() - t0);
  }
  times.sort((a, b) => a - b);
  cpuTimes.sort((a, b) => a - b);
  const mid = Math.floor(repeats / 2);
  const warm = { maxLoad: result.loads[0], minLoad: result.loads[k - 1], bins: result.bins };
  return [
    {
      name: `@rl2/packing karmarkarKarp (warm, median of ${repeats})`,
      ms: times[mid],
      cpuMs: cpuTimes[mid],
      ...warm,
    },
    {
      name: '@rl2/packing karmarkarKarp (first call, cold JIT)',
      ms: coldMs,
      cpuMs: coldCpu,
      maxLoad: cold.loads[0],
      minLoad: cold.loads[k - 1],
    },
  ];
}

function locateRl2(): string | undefined {
  const given = arg('rl2', process.env.RL2_PATH);
  if (!given) return undefined;
  for (const p of [
    given,
    join(given, 'RL2', 'utils', 'seqlen_balance.py'),
    join(given, 'utils', 'seqlen_balance.py'),
  ]) {
    if (p.endsWith('.py') && existsSync(p)) return p;
  }
  return undefined;
}

function measurePython(file: string): Row | string {
  const python = process.env.PYTHON ?? 'python3';
  const dir = mkdtempSync(join(tmpdir(), 'rl2-packing-bench-'));
  try {
    const lengthsFile = join(dir, 'lengths.json');
    writeFileSync(lengthsFile, JSON.stringify(lengths));
    const timer = join(import.meta.dirname, '..', 'scripts', 'rl2_partition_timer.py');
    const r = spawnSync(python, [timer, file, lengthsFile, String(k)], {
      encoding: 'utf8',
      maxBuffer: 1 << 28,
    });
    if (r.error || r.status !== 0)
      return `${python} failed: ${r.error?.message ?? r.stderr.trim().split('\n').pop()}`;
    const { seconds, cpuSeconds, bins } = JSON.parse(r.stdout) as {
      seconds: number;
      cpuSeconds: number;
      bins: number[][];
    };
    const loads = bins.map((b) => b.reduce((s, i) => s + lengths[i], 0));
    return {
      name: 'RL2 get_seqlen_balanced_partitions (python3, 1 run)',
      ms: seconds * 1000,
      cpuMs: cpuSeconds * 1000,
      maxLoad: Math.max(...loads),
      minLoad: Math.min(...loads),
      bins,
    };
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
}

console.log(
  `Packing ${n} log-normal lengths (total ${total} tokens, max ${Math.max(...lengths)}) into ${k} bins`,
);
const tsRows = measureTs();
const ts = tsRows[0];
const rows: Row[] = [...tsRows];
const given = arg('rl2', process.env.RL2_PATH);
const rl2 = locateRl2();
let notice = '';
if (!rl2) {
  notice = given
    ? `RL2 Python column skipped: no RL2/utils/seqlen_balance.py found at ${given}.`
    : 'RL2 Python column skipped: pass --rl2 /path/to/RL2 or set RL2_PATH (the ChenmienTan/RL2 checkout).';
} else {
  const py = measurePython(rl2);
  if (typeof py === 'string') notice = `RL2 Python column skipped: ${py}`;
  else rows.push(py);
}

const reference = rows.find((r) => r.name.startsWith('RL2'));
console.log(
  '\n| implementation | wall (ms) | CPU (ms) | max load | max/mean | min/mean | speed-up wall | speed-up CPU |',
);
console.log('|---|---:|---:|---:|---:|---:|---:|---:|');
for (const row of rows) {
  const wall = reference ? `${(reference.ms / row.ms).toFixed(1)}x` : 'n/a';
  const cpuRatio = reference ? `${(reference.cpuMs / row.cpuMs).toFixed(1)}x` : 'n/a';
  console.log(
    `| ${row.name} | ${row.ms.toFixed(1)} | ${row.cpuMs.toFixed(1)} | ${row.maxLoad} | ${(row.maxLoad / mean).toFixed(6)} | ` +
      `${(row.minLoad / mean).toFixed(6)} | ${wall} | ${cpuRatio} |`,
  );
}
console.log(`\nmean load ${mean.toFixed(2)} tokens`);
if (reference) {
  const same = JSON.stringify(reference.bins) === JSON.stringify(ts.bins);
  console.log(`identical partition to RL2: ${same ? 'yes' : 'NO'}`);
}
if (notice) console.log(notice);
