// `pnpm bench train-profile [--batch B] [--steps N] [--top K] [--no-torch]`: where one training
// step of the tiny Llama (bench/train-step.ts, the step `pnpm bench models` times) spends its CPU
// time, per phase (forward, backward, optimizer, loss read back) and per kernel, next to the same
// step in PyTorch 1.13 (scripts/bench_torch.py profile, 1 thread). Per phase: CPU ms in kernels
// (their self time), outside kernels (tfjs dispatch and bookkeeping, model JS), of which V8 GC
// pauses (wall ms), and kernel dispatches. All figures are per step, averaged over N steps.
import { spawnSync } from 'node:child_process';
import { PerformanceObserver } from 'node:perf_hooks';
import { join } from 'node:path';
import { execSync } from 'node:child_process';
import {
  initEngine,
  kernelDispatches,
  type KernelProfile,
  startKernelProfile,
  stopKernelProfile,
} from '@rl2/engine';
import { makeTrainStep } from './train-step.js';

const args = process.argv.slice(2);
const flag = (name: string, fallback: number) => {
  const i = args.indexOf(name);
  return i >= 0 ? Number(args[i + 1]) : fallback;
};
const BATCH = flag('--batch', 8);
const STEPS = flag('--steps', 3);
const TOP = flag('--top', 15);
const SEQ = 256;

interface TorchProfile {
  phases_cpu_ms: Record<string, number>;
  top_ops: { name: string; calls: number; self_cpu_ms: number }[];
}

function torchProfile(): TorchProfile | string {
  if (args.includes('--no-torch')) return 'not run (--no-torch)';
  const script = join(import.meta.dirname, '..', 'scripts', 'bench_torch.py');
  const argv = [
    script,
    'profile',
    '--threads',
    '1',
    '--batch',
    String(BATCH),
    '--seq',
    String(SEQ),
  ];
  const r = spawnSync(
    '/usr/bin/python3',
    [...argv, '--steps', String(STEPS), '--top', String(TOP)],
    { encoding: 'utf8' },
  );
  try {
    return JSON.parse(r.stdout.trim().split('\n').at(-1) ?? '') as TorchProfile;
  } catch {
    return `failed (exit ${r.status}): ${(r.stderr || '').trim().split('\n').slice(-2).join(' | ')}`;
  }
}

/** GC pause wall ms per phase, from the observer's entries and the profile's phase marks. */
function gcByPhase(
  gcs: { start: number; ms: number }[],
  marks: KernelProfile['marks'],
): Map<string, number> {
  const out = new Map<string, number>();
  for (const g of gcs) {
    const m = marks.filter((x) => x.at <= g.start).at(-1);
    if (m) out.set(m.phase, (out.get(m.phase) ?? 0) + g.ms);
  }
  return out;
}

async function main(): Promise<void> {
  const uptime = () => execSync('uptime').toString().trim();
  console.log(`train-profile: batch ${BATCH}x${SEQ}, ${STEPS} profiled steps; start: ${uptime()}`);
  const engine = await initEngine({ backend: 'auto', training: true, logger: () => {} });
  const step = makeTrainStep({ batch: BATCH, seq: SEQ });
  await step(); // warm-up
  const gcs: { start: number; ms: number }[] = [];
  const obs = new PerformanceObserver((list) => {
    for (const e of list.getEntries()) gcs.push({ start: e.startTime, ms: e.duration });
  });
  obs.observe({ entryTypes: ['gc'] });
  const dispatch = new Map<string, number>();
  startKernelProfile();
  for (let i = 0; i < STEPS; i++) await step();
  const prof = stopKernelProfile();
  await new Promise((r) => setTimeout(r, 50)); // the observer reports asynchronously
  obs.disconnect();
  for (const [phase, ks] of prof.kernels)
    dispatch.set(
      phase,
      [...ks.values()].reduce((n, k) => n + k.calls, 0),
    );
  const gc = gcByPhase(gcs, prof.marks);
  const torch = torchProfile();
  const per = (x: number) => (x / STEPS).toFixed(1);
  console.log(
    `rl2 ${engine.backend}, ${engine.threads} threads; torch 1.13, 1 thread; ms per step`,
  );
  console.log(
    '| phase | rl2 CPU | in kernels | outside kernels | GC pauses (wall) | dispatches | torch CPU |',
  );
  console.log('|---|---:|---:|---:|---:|---:|---:|');
  let total = { cpu: 0, kernels: 0, gc: 0, n: 0, torch: 0 };
  for (const phase of ['forward', 'backward', 'optimizer', 'read back', 'collect']) {
    const cpu = prof.phases.get(phase)?.cpuMs ?? 0;
    const kernels = [...(prof.kernels.get(phase)?.values() ?? [])].reduce((s, k) => s + k.cpuMs, 0);
    const t = typeof torch === 'string' ? undefined : torch.phases_cpu_ms[phase];
    const row = [
      phase,
      per(cpu),
      per(kernels),
      per(cpu - kernels),
      per(gc.get(phase) ?? 0),
      per(dispatch.get(phase) ?? 0),
    ];
    console.log(`| ${row.join(' | ')} | ${t === undefined ? '-' : t.toFixed(1)} |`);
    total = {
      cpu: total.cpu + cpu,
      kernels: total.kernels + kernels,
      gc: total.gc + (gc.get(phase) ?? 0),
      n: total.n + (dispatch.get(phase) ?? 0),
      torch: total.torch + (t ?? 0),
    };
  }
  const tot = [
    per(total.cpu),
    per(total.kernels),
    per(total.cpu - total.kernels),
    per(total.gc),
    per(total.n),
  ];
  console.log(
    `| total | ${tot.join(' | ')} | ${typeof torch === 'string' ? '-' : total.torch.toFixed(1)} |`,
  );
  const tokens = BATCH * SEQ;
  console.log(
    `tokens/CPU-s: rl2 ${((tokens * STEPS) / (total.cpu / 1000)).toFixed(0)}` +
      (typeof torch === 'string' ? '' : `, torch ${(tokens / (total.torch / 1000)).toFixed(0)}`),
  );
  const rows = [...prof.kernels].flatMap(([phase, ks]) =>
    [...ks].map(([name, k]) => ({ phase, name, ...k })),
  );
  rows.sort((a, b) => b.cpuMs - a.cpuMs);
  console.log(`\nrl2 kernels by self CPU ms per step (top ${TOP})`);
  console.log('| kernel | phase | calls | CPU | wall |');
  console.log('|---|---|---:|---:|---:|');
  for (const r of rows.slice(0, TOP))
    console.log(
      `| ${r.name} | ${r.phase} | ${per(r.calls)} | ${per(r.cpuMs)} | ${per(r.wallMs)} |`,
    );
  if (typeof torch === 'string') console.log(`\ntorch: ${torch}`);
  else {
    console.log(`\ntorch ops by self CPU ms, one profiled step (top ${TOP}; profiler wall time)`);
    console.log('| op | calls | self CPU |');
    console.log('|---|---:|---:|');
    for (const o of torch.top_ops)
      console.log(`| ${o.name} | ${o.calls} | ${o.self_cpu_ms.toFixed(1)} |`);
  }
  console.log(`end: ${uptime()}; dispatches in total ${kernelDispatches()}`);
}

await main();
