// `pnpm bench sft-profile --model DIR --data STEPS.json [--steps N]`: where `rl2 sft`'s step spends
// its CPU time at a real shape, in process: per phase (forward, backward, gradient norm, optimizer)
// and per kernel. DIR and STEPS.json come from `pnpm bench scale --only sft --layers 4 --dir D`
// (D/model, D/sft.jsonl). The first step is a warm-up; the figures are per step over the rest.
import { execSync } from 'node:child_process';
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { PerformanceObserver } from 'node:perf_hooks';
import {
  type KernelProfile,
  setProfilePhase,
  startKernelProfile,
  stopKernelProfile,
} from '@rl2/engine';
import * as tf from '@tensorflow/tfjs-core';
import { loadConfig, runSft, sftConfigSchema } from '../src/index.js';
import { AdamW } from '../src/optim/adamw.js';

const args = process.argv.slice(2);
const opt = (name: string, fallback?: string) => {
  const i = args.indexOf(name);
  const v = i >= 0 ? args[i + 1] : fallback;
  if (v === undefined)
    throw new Error(`${name} is required (see the header of sft-profile.bench.ts)`);
  return v;
};
const MODEL = opt('--model');
const DATA = opt('--data');
const STEPS = Number(opt('--steps', '3'));
const TOP = Number(opt('--top', '20'));

/**
 * Marks the phases: the tape's forward and backward tidies (a forward inside the backward is a
 * checkpointed layer's recompute), the optimizer step, the rest ('norm, reduce' between the
 * backward and the optimizer: the gradient norm and the step's read-back).
 */
function markPhases(counting: () => boolean, afterStep: () => void): void {
  const engine = tf.engine() as unknown as { tidy: (...a: unknown[]) => unknown };
  const tidy = engine.tidy.bind(engine);
  const stack: string[] = [];
  engine.tidy = (nameOrFn: unknown, fn?: unknown) => {
    const name = typeof nameOrFn === 'string' ? nameOrFn : undefined;
    if (!counting() || (name !== 'forward' && name !== 'backward')) return tidy(nameOrFn, fn);
    const phase = name === 'forward' && stack.includes('backward') ? 'recompute' : name;
    stack.push(phase);
    setProfilePhase(phase);
    try {
      return tidy(nameOrFn, fn);
    } finally {
      stack.pop();
      setProfilePhase(stack.at(-1) ?? (name === 'forward' ? 'tape' : 'norm, reduce'));
    }
  };
  const step = AdamW.prototype.step;
  AdamW.prototype.step = function (this: AdamW, ...a: Parameters<AdamW['step']>) {
    setProfilePhase('optimizer');
    try {
      return step.apply(this, a);
    } finally {
      setProfilePhase('other');
      afterStep();
    }
  };
}

async function main(): Promise<void> {
  const dir = mkdtempSync(join(tmpdir(), 'rl2-sft-profile-'));
  const uptime = () => execSync('uptime').toString().trim();
  console.log(`sft-profile ${MODEL}: ${STEPS} steps (+1 warm-up); start: ${uptime()}`);
  let started = false;
  let afterOptimizer = () => {};
  markPhases(
    () => started,
    () => afterOptimizer(),
  );
  const gcs: { start: number; ms: number }[] = [];
  const obs = new PerformanceObserver((list) => {
    for (const e of list.getEntries())
      if (started) gcs.push({ start: e.startTime, ms: e.duration });
  });
  obs.observe({ entryTypes: ['gc'] });
  writeFileSync(
    join(dir, 'test.jsonl'),
    `${JSON.stringify({ prompt: 'the', response: 'of and' })}\n`,
  );
  const overrides = [
    `actor.model_name=${MODEL}`,
    `data.train.path=${DATA}`,
    `data.test.path=${join(dir, 'test.jsonl')}`,
    'data.train.batch_size=2',
    'data.shuffle=false',
    'trainer.val_before_train=false',
    'trainer.report=false',
    'trainer.use_tensorboard=false',
    'trainer.progress=none',
    'actor.warmup_ratio=0',
    `trainer.save_dir=${join(dir, 'out')}`,
    `trainer.max_steps=${STEPS + 1}`,
    'trainer.save_freq=1000',
    'trainer.n_epochs=4',
  ];
  const config = loadConfig(sftConfigSchema, { overrides });
  let stepsDone = 0;
  const cpu0 = { v: process.cpuUsage(), wall: 0 };
  const done: { prof?: KernelProfile } = {};
  let cpu = cpu0.v;
  let wall = 0;
  afterOptimizer = () => {
    stepsDone++;
    if (stepsDone === 1) {
      started = true;
      cpu0.v = process.cpuUsage();
      cpu0.wall = performance.now();
      startKernelProfile();
    } else if (stepsDone === STEPS + 1) {
      done.prof = stopKernelProfile();
      cpu = process.cpuUsage(cpu0.v);
      wall = performance.now() - cpu0.wall;
      started = false;
    }
  };
  await runSft(config);
  const prof = done.prof;
  if (!prof) throw new Error('fewer optimizer steps than --steps + 1 ran');
  obs.disconnect();
  const per = (x: number) => (x / STEPS).toFixed(0);
  console.log(`\nper step: CPU ${per((cpu.user + cpu.system) / 1000)} ms, wall ${per(wall)} ms`);
  console.log('| phase | CPU ms | wall ms | in kernels CPU | GC wall |');
  console.log('|---|---:|---:|---:|---:|');
  for (const [phase, t] of prof.phases) {
    const k = [...(prof.kernels.get(phase)?.values() ?? [])].reduce((s, x) => s + x.cpuMs, 0);
    const gc = gcs
      .filter((g) => prof.marks.filter((m) => m.at <= g.start).at(-1)?.phase === phase)
      .reduce((s, g) => s + g.ms, 0);
    console.log(`| ${phase} | ${per(t.cpuMs)} | ${per(t.wallMs)} | ${per(k)} | ${per(gc)} |`);
  }
  const rows = [...prof.kernels].flatMap(([phase, ks]) =>
    [...ks].map(([name, k]) => ({ phase, name, ...k })),
  );
  rows.sort((a, b) => b.cpuMs - a.cpuMs);
  console.log(
    `\nkernels by self CPU ms per step (top ${TOP})\n| kernel | phase | calls | CPU | wall |\n|---|---|---:|---:|---:|`,
  );
  for (const r of rows.slice(0, TOP))
    console.log(
      `| ${r.name} | ${r.phase} | ${per(r.calls)} | ${per(r.cpuMs)} | ${per(r.wallMs)} |`,
    );
  // the steps' loss and gradient norm, to compare two builds on the same model and data
  const metrics = readFileSync(join(dir, 'out', 'metrics.jsonl'), 'utf8')
    .trim()
    .split('\n');
  for (const m of metrics.map((l) => JSON.parse(l) as Record<string, number>))
    if (m['train/loss'] !== undefined)
      console.log(`step ${m.step}: loss ${m['train/loss']}, grad_norm ${m['train/grad_norm']}`);
  console.log(`end: ${uptime()}`);
  rmSync(dir, { recursive: true, force: true });
}

await main();
