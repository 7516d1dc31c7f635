// `pnpm bench scale [--only sft,micro,serve,grpo] [--steps N] [--rows R] [--words W] [--new N]
// [--layers L] [--dir DIR]`: the whole path at the smallest real model shape (Qwen3-0.6B: hidden
// 1024, 28 layers, 16 heads / 8 kv heads of 128, MLP 3072, the Qwen3 tokenizer's 151669 rows, tied
// embeddings, bf16 weights):
//   1. `rl2 init-model` writes the checkpoint;
//   2. sft: `rl2 sft` N steps of R rows with a save, then a resume from it for one more step;
//   3. micro: one SFT step split into 2 micro-batches (`actor.max_length_per_device`), where the
//      gradients are accumulated over the micro-batches;
//   4. serve: `rl2 serve` greedy generation at batch 1 and 8 (concurrent /generate requests);
//   5. grpo: GRPO steps (`rl2 ppo`, 2 prompts x 4 responses) with float32 and bfloat16 rollout weights;
// each next to PyTorch 1.13 CPU on the same checkpoint and the same token ids
// (packages/models/scripts/bench_scale_torch.py), every measurement in its own process (peak RSS
// is that process's, read with /usr/bin/time or /proc). `--only` picks the parts (default all).
// Needs `pnpm build` (it runs the CLI). Wall-clock rates on a shared machine swing with the load,
// so a second table gives each process's CPU seconds (user + sys) for the same work, and the load
// average before and after.
// After the tables, where the SFT peak goes: parameters, gradients, AdamW moments and logits
// computed from the shape and the step's tokens, the rest (activations kept for the backward,
// runtime, temporaries) as the measured peak minus those.
// All parts take about 25 minutes on a 2-core VM; --steps 1 is quicker, --layers 4 keeps the
// real widths with fewer layers, --tiny checks the plumbing.
import { type ChildProcess, spawn, spawnSync } from 'node:child_process';
import { existsSync, mkdirSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { createServer } from 'node:net';
import { availableParallelism, cpus, loadavg, tmpdir, totalmem } from 'node:os';
import { join, resolve } from 'node:path';
import { loadTokenizer } from '@rl2/data';
import { loadItems } from '../src/dataset/load-items.js';
import { loadConfig, sftConfigSchema } from '../src/index.js';

const ROOT = resolve(import.meta.dirname, '..', '..', '..');
const CLI = join(ROOT, 'apps', 'cli', 'dist', 'cli.js');
const TORCH_SCRIPT = join(ROOT, 'packages', 'models', 'scripts', 'bench_scale_torch.py');
const args = process.argv.slice(2);
const flag = (name: string, fallback: number) =>
  args.includes(name) ? Number(args[args.indexOf(name) + 1]) : fallback;
const STEPS = flag('--steps', 2);
const ROWS = flag('--rows', 2);
const WORDS = flag('--words', 100);
const NEW = flag('--new', 16);
const PROMPT = 32;
const PARTS = ['sft', 'micro', 'serve', 'grpo'] as const;
const ONLY = args.includes('--only') ? (args[args.indexOf('--only') + 1] ?? '').split(',') : PARTS;
for (const p of ONLY)
  if (!(PARTS as readonly string[]).includes(p))
    throw new Error(`--only ${p}: not a part; use a comma list of ${PARTS.join(', ')}`);
const runs = (part: (typeof PARTS)[number]) => ONLY.includes(part);
/**
 * rl2's vocabulary chunk for the log-prob head (@rl2/models tokenLogprobs' default on native):
 * the whole vocabulary while tokens x rows fit HEAD_LOGITS_BUDGET (2^26 floats), else 8192 rows.
 */
const VOCAB_CHUNK = 8192;
const HEAD_LOGITS_BUDGET = 2 ** 26;
/** `--tiny`: hidden 64, 2 layers (same tokenizer and vocabulary): checks the bench's plumbing in a minute. */
const SHAPE = args.includes('--tiny')
  ? [
      '--hidden-size',
      '64',
      '--layers',
      '2',
      '--heads',
      '4',
      '--kv-heads',
      '2',
      '--head-dim',
      '16',
      '--intermediate-size',
      '128',
    ]
  : [
      '--hidden-size',
      '1024',
      '--layers',
      '28',
      '--heads',
      '16',
      '--kv-heads',
      '8',
      '--head-dim',
      '128',
      '--intermediate-size',
      '3072',
    ];
if (args.includes('--layers')) SHAPE[SHAPE.indexOf('--layers') + 1] = String(flag('--layers', 28));
const dir = args.includes('--dir')
  ? resolve(args[args.indexOf('--dir') + 1]!)
  : mkdtempSync(join(tmpdir(), 'rl2-bench-scale-'));
mkdirSync(dir, { recursive: true });
const MODEL = join(dir, 'model');
const hasTime = existsSync('/usr/bin/time');

interface Run {
  seconds: number;
  /** user + sys CPU seconds of the process (all its threads). */
  cpuSeconds: number;
  peakMiB: number;
  stdout: string;
}

/** Runs a command to the end; its wall time, CPU time and peak RSS (GNU time's %U %S %M). */
function measure(cmd: string, argv: string[], env: NodeJS.ProcessEnv = {}): Run {
  const rssFile = join(dir, 'rss.txt');
  const began = performance.now();
  const r = hasTime
    ? spawnSync('/usr/bin/time', ['-f', '%U %S %M', '-o', rssFile, cmd, ...argv], {
        encoding: 'utf8',
        maxBuffer: 1 << 26,
        env: { ...process.env, ...env },
      })
    : spawnSync(cmd, argv, {
        encoding: 'utf8',
        maxBuffer: 1 << 26,
        env: { ...process.env, ...env },
      });
  const seconds = (performance.now() - began) / 1000;
  if (r.status !== 0)
    throw new Error(
      `${cmd} ${argv.slice(0, 3).join(' ')} ... failed (exit ${r.status}):\n${(r.stderr || r.stdout).split('\n').slice(-15).join('\n')}`,
    );
  const [user, sys, rss] = hasTime
    ? (readFileSync(rssFile, 'utf8').trim().split('\n').at(-1) as string).split(' ').map(Number)
    : [Number.NaN, Number.NaN, Number.NaN];
  return { seconds, cpuSeconds: user! + sys!, peakMiB: rss! / 1024, stdout: r.stdout };
}

const rl2 = (argv: string[]) => measure(process.execPath, [CLI, ...argv]);
const torch = (argv: string[]) => {
  const r = measure('/usr/bin/python3', [TORCH_SCRIPT, ...argv]);
  return {
    ...r,
    json: JSON.parse(r.stdout.trim().split('\n').at(-1) as string) as Record<string, number>,
  };
};

/** Deterministic English-like text (words from a fixed list, an LCG). */
function words(n: number, seed: number): string {
  const list = (
    'the of and to in is that for it as was with be by on not he this are or his from at which ' +
    'but have an they you were her she there one all we their'
  ).split(' ');
  let x = seed;
  return Array.from({ length: n }, () => {
    x = (Math.imul(x, 1664525) + 1013904223) >>> 0;
    return list[x % list.length];
  }).join(' ');
}

const metricsOf = (saveDir: string) =>
  readFileSync(join(saveDir, 'metrics.jsonl'), 'utf8')
    .trim()
    .split('\n')
    .map((l) => JSON.parse(l) as Record<string, number>);

/** Sum of step tokens over sum of step seconds, from the SFT metrics (train/tokens_per_s is per step). */
function sftRate(
  metrics: Record<string, number>[],
  tokensOfStep: (step: number) => number,
): number {
  let tokens = 0;
  let seconds = 0;
  for (const m of metrics) {
    if (m['train/tokens_per_s'] === undefined) continue;
    const t = tokensOfStep(m.step as number);
    tokens += t;
    seconds += t / (m['train/tokens_per_s'] as number);
  }
  return tokens / seconds;
}

async function freePort(): Promise<number> {
  return await new Promise((ok) => {
    const s = createServer().listen(0, '127.0.0.1', () => {
      const { port } = s.address() as { port: number };
      s.close(() => ok(port));
    });
  });
}

/** Peak RSS of a running process (VmHWM), MiB. */
const vmHwmMiB = (pid: number) =>
  Number(/VmHWM:\s+(\d+)/.exec(readFileSync(`/proc/${pid}/status`, 'utf8'))?.[1]) / 1024;

const CLK_TCK = Number(spawnSync('getconf', ['CLK_TCK'], { encoding: 'utf8' }).stdout) || 100;
/** CPU seconds (user + sys, all threads) a running process has used so far. */
function cpuOf(pid: number): number {
  const stat = readFileSync(`/proc/${pid}/stat`, 'utf8');
  const fields = stat.slice(stat.lastIndexOf(')') + 2).split(' '); // fields from the 3rd on
  return (Number(fields[11]) + Number(fields[12])) / CLK_TCK; // utime, stime
}

interface Rate {
  tokensPerS: number;
  tokensPerCpuS: number;
}

async function serveGeneration(
  prompts: number[][],
): Promise<{ b1: Rate; b8: Rate; peakMiB: number }> {
  const port = await freePort();
  const server: ChildProcess = spawn(
    process.execPath,
    [CLI, 'serve', '--model', MODEL, '--port', String(port), '--max-batch', '8'],
    { stdio: ['ignore', 'pipe', 'pipe'] },
  );
  let log = '';
  server.stdout?.on('data', (d) => (log += d));
  server.stderr?.on('data', (d) => (log += d));
  try {
    const url = `http://127.0.0.1:${port}`;
    for (;;) {
      if (server.exitCode !== null) throw new Error(`rl2 serve exited: ${log}`);
      const ok = await fetch(`${url}/health`).then(
        (r) => r.ok,
        () => false,
      );
      if (ok) break;
      await new Promise((r) => setTimeout(r, 500));
    }
    const generate = (ids: number[]) =>
      fetch(`${url}/generate`, {
        method: 'POST',
        headers: { 'content-type': 'application/json' },
        body: JSON.stringify({
          input_ids: ids,
          sampling_params: { temperature: 0, max_new_tokens: NEW, ignore_eos: true },
        }),
      }).then(async (r) => {
        if (!r.ok) throw new Error(`/generate: HTTP ${r.status} ${await r.text()}`);
        return (await r.json()) as {
          output_ids?: number[];
          meta_info?: { completion_tokens?: number };
        };
      });
    await generate(prompts[0]!.slice(0, 4)); // first request: lazy allocations out of the way
    const rate = async (batch: number): Promise<Rate> => {
      const cpu0 = cpuOf(server.pid as number);
      const began = performance.now();
      const outs = await Promise.all(prompts.slice(0, batch).map(generate));
      const seconds = (performance.now() - began) / 1000;
      const tokens = outs.reduce(
        (a, o) => a + (o.meta_info?.completion_tokens ?? o.output_ids?.length ?? NEW),
        0,
      );
      return {
        tokensPerS: tokens / seconds,
        tokensPerCpuS: tokens / (cpuOf(server.pid as number) - cpu0),
      };
    };
    const b1 = await rate(1);
    const b8 = await rate(8);
    return { b1, b8, peakMiB: vmHwmMiB(server.pid as number) };
  } finally {
    server.kill('SIGTERM');
    await new Promise((r) => server.once('exit', r));
  }
}

const rows: string[][] = [];
const row = (what: string, rl2v: number, torchv: number, unit: string, higherBetter: boolean) =>
  rows.push([
    what,
    `${rl2v.toFixed(unit === 'MiB' ? 0 : 2)} ${unit}`,
    `${torchv.toFixed(unit === 'MiB' ? 0 : 2)} ${unit}`,
    `${(rl2v / torchv).toFixed(2)}x ${higherBetter ? '(higher is better)' : '(lower is better)'}`,
  ]);
/** Whole processes doing the same work on both sides: wall and CPU seconds. */
const processRows: string[][] = [];
const processRow = (what: string, a: Run, b: Run) =>
  processRows.push([
    what,
    `${a.seconds.toFixed(0)} / ${a.cpuSeconds.toFixed(0)}`,
    `${b.seconds.toFixed(0)} / ${b.cpuSeconds.toFixed(0)}`,
    `${(a.cpuSeconds / b.cpuSeconds).toFixed(2)}x`,
  ]);
const load = () =>
  loadavg()
    .map((x) => x.toFixed(2))
    .join(', ');

type Steps = { ids: number[]; mask: number[] }[][];

async function main() {
  const loadBefore = load();
  console.log(
    `scale bench in ${dir}: ${ONLY.join(', ')}; ${STEPS} SFT steps of ${ROWS} rows (+1 resumed), ` +
      `generation of ${NEW} tokens; ${availableParallelism()} cores (${cpus()[0]?.model}), ` +
      `${(totalmem() / 2 ** 30).toFixed(0)} GiB, load average ${loadBefore}`,
  );
  // with --dir, a checkpoint of the same shape from an earlier run is reused
  const shapeFile = join(dir, 'model-shape.json');
  const reuse = existsSync(shapeFile) && readFileSync(shapeFile, 'utf8') === JSON.stringify(SHAPE);
  if (!reuse) rmSync(shapeFile, { force: true });
  const init = reuse
    ? { seconds: 0, cpuSeconds: 0, peakMiB: 0, stdout: '' }
    : rl2(['init-model', '--tokenizer', 'qwen3', ...SHAPE, '--dtype', 'bfloat16', '--out', MODEL]);
  writeFileSync(shapeFile, JSON.stringify(SHAPE));
  console.log(
    reuse
      ? `init-model: reusing ${MODEL}`
      : `init-model: ${init.seconds.toFixed(1)} s, peak ${init.peakMiB.toFixed(0)} MiB`,
  );

  // SFT data: R rows per step, plus one held-out row for the end-of-run validation
  const sftRows = Array.from({ length: ROWS * (STEPS + 1) }, (_, i) =>
    JSON.stringify({ prompt: words(WORDS / 5, 2 * i + 1), response: words(WORDS, 2 * i + 2) }),
  );
  writeFileSync(join(dir, 'sft.jsonl'), `${sftRows.join('\n')}\n`);
  writeFileSync(
    join(dir, 'test.jsonl'),
    `${JSON.stringify({ prompt: 'the', response: 'of and' })}\n`,
  );
  const overrides = [
    `actor.model_name=${MODEL}`,
    `data.train.path=${join(dir, 'sft.jsonl')}`,
    `data.test.path=${join(dir, 'test.jsonl')}`,
    `data.train.batch_size=${ROWS}`,
    'data.shuffle=false',
    'trainer.val_before_train=false',
    'trainer.report=false',
    'trainer.use_tensorboard=false',
    'trainer.progress=none',
    'actor.warmup_ratio=0',
  ];
  // the very token ids rl2 trains on, step by step, for the PyTorch side
  const cfg = loadConfig(sftConfigSchema, { overrides });
  const { train } = await loadItems('sft', await loadTokenizer(MODEL), cfg.data, cfg.trainer.seed);
  const steps: Steps = Array.from({ length: STEPS + 1 }, (_, s) =>
    train
      .slice(s * ROWS, (s + 1) * ROWS)
      .flatMap((it) => it.sequences.map((q) => ({ ids: [...q.inputIds], mask: [...q.lossMask] }))),
  );
  writeFileSync(join(dir, 'steps.json'), JSON.stringify({ steps: steps.slice(0, STEPS) }));
  writeFileSync(join(dir, 'resume-step.json'), JSON.stringify({ steps: steps.slice(STEPS) }));

  let sftPeaks: [number, number] | undefined;
  if (runs('sft')) sftPeaks = sftAndResume(overrides, steps);
  if (runs('micro')) microBatches(overrides, steps);
  if (runs('serve')) await generation(steps);
  if (runs('grpo')) grpo();
  printTable();
  if (processRows.length > 0) printProcessTable();
  console.log(`\nload average (1, 5, 15 min): ${loadBefore} at the start, ${load()} at the end`);
  if (sftPeaks)
    memoryBreakdown(
      Math.max(...steps.slice(0, STEPS).map((q) => q.reduce((a, x) => a + x.ids.length, 0))),
      ...sftPeaks,
    );
  if (!args.includes('--dir')) rmSync(dir, { recursive: true, force: true });
}

/** N SFT steps with a save, then one resumed step; each next to PyTorch. Returns the two SFT peaks. */
function sftAndResume(overrides: string[], steps: Steps): [number, number] {
  const tokensOf = (s: number) => steps[s - 1]!.reduce((a, q) => a + q.ids.length, 0);
  const sftDir = join(dir, 'rl2-sft');
  rmSync(sftDir, { recursive: true, force: true });
  const sft = rl2([
    'sft',
    ...overrides,
    `trainer.save_dir=${sftDir}`,
    `trainer.max_steps=${STEPS}`,
    `trainer.save_freq=${STEPS}`,
    'trainer.n_epochs=2',
  ]);
  const sftRate1 = sftRate(metricsOf(sftDir), tokensOf);
  const resumed = rl2([
    'sft',
    ...overrides,
    `trainer.save_dir=${sftDir}`,
    `trainer.max_steps=${STEPS + 1}`,
    'trainer.load_ckpt_from=latest',
    'trainer.n_epochs=2',
  ]);
  const resumeRate = sftRate(
    metricsOf(sftDir).filter((m) => (m.step as number) > STEPS),
    tokensOf,
  );
  const tSft = torch([
    'sft',
    MODEL,
    '--data',
    join(dir, 'steps.json'),
    '--save',
    join(dir, 'torch-sft'),
  ]);
  const tResume = torch([
    'resume',
    join(dir, 'torch-sft'),
    '--data',
    join(dir, 'resume-step.json'),
  ]);
  row(
    `SFT, ${STEPS} steps (~${Math.round(tokensOf(1))} tokens each), train tokens/s`,
    sftRate1,
    tSft.json.tokens_per_s as number,
    'tok/s',
    true,
  );
  row('SFT with the save: peak RSS', sft.peakMiB, tSft.peakMiB, 'MiB', false);
  row(
    'SFT resumed (+1 step): tokens/s',
    resumeRate,
    tResume.json.tokens_per_s as number,
    'tok/s',
    true,
  );
  row('SFT resumed: peak RSS', resumed.peakMiB, tResume.peakMiB, 'MiB', false);
  processRow(`SFT: load, ${STEPS} steps, save`, sft, tSft);
  processRow('SFT resumed: load model and optimizer, 1 step', resumed, tResume);
  return [sft.peakMiB, tSft.peakMiB];
}

/** One SFT step over the first step's rows, one micro-batch per sequence (gradients accumulated), and the save. */
function microBatches(overrides: string[], steps: Steps) {
  const seqs = steps[0]!;
  const tokens = seqs.reduce((a, q) => a + q.ids.length, 0);
  // a budget that fits the longest sequence but not two: one micro-batch per sequence
  const budget = Math.max(...seqs.map((q) => q.ids.length));
  const microDir = join(dir, 'rl2-micro');
  rmSync(microDir, { recursive: true, force: true });
  const micro = rl2([
    'sft',
    ...overrides,
    `trainer.save_dir=${microDir}`,
    'trainer.max_steps=1',
    `actor.max_length_per_device=${budget}`,
  ]);
  const rate = sftRate(metricsOf(microDir), () => tokens);
  const tMicro = torch([
    'sft',
    MODEL,
    '--data',
    join(dir, 'steps.json'),
    '--micro',
    String(seqs.length),
    '--max-steps',
    '1',
    '--save',
    join(dir, 'torch-micro'),
  ]);
  row(
    `SFT, 1 step in ${seqs.length} micro-batches (${tokens} tokens), train tokens/s`,
    rate,
    tMicro.json.tokens_per_s as number,
    'tok/s',
    true,
  );
  row(
    `SFT in ${seqs.length} micro-batches with the save: peak RSS`,
    micro.peakMiB,
    tMicro.peakMiB,
    'MiB',
    false,
  );
  processRow(`SFT in ${seqs.length} micro-batches: load, 1 step, save`, micro, tMicro);
}

async function generation(steps: Steps) {
  const prompts = Array.from({ length: 8 }, (_, i) =>
    steps[0]![i % steps[0]!.length]!.ids.slice(0, PROMPT),
  );
  const gen = await serveGeneration(prompts);
  const tGen = [1, 8].map((batch) =>
    torch([
      'generate',
      MODEL,
      '--batch',
      String(batch),
      '--prompt',
      String(PROMPT),
      '--new',
      String(NEW),
    ]),
  );
  const [t1, t8] = tGen.map((t) => t.json) as [Record<string, number>, Record<string, number>];
  row(
    `generation batch 1 (${PROMPT} prompt + ${NEW} new, greedy), tokens/s`,
    gen.b1.tokensPerS,
    t1.tokens_per_s!,
    'tok/s',
    true,
  );
  row(
    'generation batch 1, tokens per CPU-s',
    gen.b1.tokensPerCpuS,
    t1.tokens_per_cpu_s!,
    'tok/CPU-s',
    true,
  );
  row('generation batch 8, tokens/s', gen.b8.tokensPerS, t8.tokens_per_s!, 'tok/s', true);
  row(
    'generation batch 8, tokens per CPU-s',
    gen.b8.tokensPerCpuS,
    t8.tokens_per_cpu_s!,
    'tok/CPU-s',
    true,
  );
  row(
    'generation: peak RSS (rl2 serve / PyTorch batch 8)',
    gen.peakMiB,
    tGen[1]!.peakMiB,
    'MiB',
    false,
  );
}

/**
 * Two `rl2 ppo` GRPO steps with the rollout's weights in `dtype`: the process, step 1's rates (a
 * 16-bit rollout's includes making its copies), step 2's rollout rate (the copies remade over
 * their arrays after the update) and engine/trainer log-prob gap (step 1 samples from the
 * checkpoint's own bf16 values, which bf16 holds exactly; step 2 from the trainer's updated
 * float32 weights rounded to the dtype).
 */
function rl2GrpoStep(dtype: 'float32' | 'bfloat16') {
  const ppoDir = join(dir, `rl2-grpo-${dtype}`);
  rmSync(ppoDir, { recursive: true, force: true });
  const ppo = rl2([
    'ppo',
    `actor.model_name=${MODEL}`,
    `data.train.path=${join(dir, 'prompts.jsonl')}`,
    `data.test.path=${join(dir, 'prompts.jsonl')}`,
    `rollout.env_path=${join(dir, 'env.mjs')}`,
    'rollout.train_prompts_per_rollout=2',
    'rollout.responses_per_prompt=4',
    `rollout.train_sampling_params.max_new_tokens=${NEW}`,
    `rollout.weight_dtype=${dtype}`,
    'rollout.dynamic_filtering=false',
    'trainer.n_epochs=2',
    'trainer.max_steps=2',
    'trainer.test_freq=null',
    'trainer.val_before_train=false',
    'trainer.report=false',
    'trainer.use_tensorboard=false',
    'trainer.progress=none',
    `trainer.save_dir=${ppoDir}`,
  ]);
  const [m = {}, m2 = {}] = metricsOf(ppoDir).filter((r) => r['time/rollout_s'] !== undefined);
  const update =
    1 /
    (1 / (m['tokens_per_s/logps'] ?? Number.POSITIVE_INFINITY) +
      1 / (m['tokens_per_s/update'] ?? Number.NaN));
  // k3 KL between the engine's sampled-token log-probs and the trainer's old log-probs (float32)
  const gap = m2['actor/engineApproxKl'] ?? Number.NaN;
  const rate = (row: Record<string, number>) => (8 * NEW) / (row['time/rollout_s'] ?? Number.NaN);
  return { ppo, rollout: rate(m), rollout2: rate(m2), update, gap };
}

/**
 * GRPO, 2 prompts x 4 responses of NEW sampled tokens, with the rollout weights in
 * float32 (what every rollout used before 16-bit generation weights) and in bfloat16 (the default
 * for this bf16 checkpoint): rollout and update tokens/s, and the engine/trainer log-prob gap.
 */
function grpo() {
  const prompts2 = [0, 1].map((i) => JSON.stringify({ prompt: words(20, 100 + i), answer: 'x' }));
  writeFileSync(join(dir, 'prompts.jsonl'), `${prompts2.join('\n')}\n`);
  writeFileSync(
    join(dir, 'env.mjs'),
    'export async function step(_s, action) { return [null, (action.length % 7) / 7, true]; }\n',
  );
  const byDtype = { float32: rl2GrpoStep('float32'), bfloat16: rl2GrpoStep('bfloat16') };
  // PyTorch: the first PROMPT tokens of two SFT rows as prompts (about as long as rl2's
  // chat-templated ones)
  const tGrpo = torch([
    'grpo',
    MODEL,
    '--data',
    join(dir, 'steps.json'),
    '--group',
    '4',
    '--prompt',
    String(PROMPT),
    '--new',
    String(NEW),
  ]);
  const torchRollout = (8 * NEW) / (tGrpo.json.generate_s as number);
  for (const [dtype, r] of Object.entries(byDtype)) {
    row(
      `GRPO step 1: rollout (8 x ${NEW} sampled tokens, ${dtype} weights), tokens/s`,
      r.rollout,
      torchRollout,
      'tok/s',
      true,
    );
    row(
      `GRPO step 2: rollout (${dtype} weights, after step 1's in-place update), tokens/s`,
      r.rollout2,
      torchRollout,
      'tok/s',
      true,
    );
    row(
      `GRPO step: update (old logprobs + backward + AdamW; ${dtype} rollout), tokens/s`,
      r.update,
      tGrpo.json.update_tokens_per_s as number,
      'tok/s',
      true,
    );
  }
  row(
    'GRPO step: peak RSS (bfloat16 rollout)',
    byDtype.bfloat16.ppo.peakMiB,
    tGrpo.peakMiB,
    'MiB',
    false,
  );
  console.log(
    '\nengine/trainer log-prob gap at GRPO step 2 (actor/engineApproxKl: k3 KL of the engine log-probs ' +
      "against the trainer's): " +
      `float32 rollout weights ${byDtype.float32.gap.toExponential(2)}, bfloat16 ${byDtype.bfloat16.gap.toExponential(2)}`,
  );
}

function printProcessTable() {
  console.log(
    '\n| process (same work on both sides) | rl2 wall s / CPU s | PyTorch 1.13 wall s / CPU s | ' +
      'rl2 / PyTorch CPU s |\n| --- | --- | --- | --- |',
  );
  for (const r of processRows) console.log(`| ${r.join(' | ')} |`);
}

function printTable() {
  console.log(
    `\n| ${new Date().toISOString().slice(0, 10)}, ${availableParallelism()} cores ` +
      `(${cpus()[0]?.model}) | rl2 | PyTorch 1.13 | rl2 / PyTorch |\n| --- | --- | --- | --- |`,
  );
  for (const r of rows) console.log(`| ${r.join(' | ')} |`);
}

/** Parameter count of the Qwen3-shaped checkpoint (tied embeddings), from its config.json. */
function parameterCount(): { params: number; vocab: number } {
  const c = JSON.parse(readFileSync(join(MODEL, 'config.json'), 'utf8')) as Record<string, number>;
  const [h, l, i, v] = [c.hidden_size!, c.num_hidden_layers!, c.intermediate_size!, c.vocab_size!];
  const d = c.head_dim ?? h / c.num_attention_heads!;
  const attn = h * d * (2 * c.num_attention_heads! + 2 * c.num_key_value_heads!) + 2 * d;
  return { params: v * h + h + l * (attn + 3 * h * i + 2 * h), vocab: v };
}

/** Where the SFT peak goes: computed parts, and the measured peak minus them. */
function memoryBreakdown(tokens: number, rl2Peak: number, torchPeak: number) {
  const { params, vocab } = parameterCount();
  const mib = (bytes: number) => bytes / 2 ** 20;
  const whole = tokens * vocab <= HEAD_LOGITS_BUDGET;
  const rl2Rows = whole ? vocab : VOCAB_CHUNK;
  const rl2Logits = whole ? 'the full' : `one ${VOCAB_CHUNK}-row chunk of the`;
  const parts: [string, number, number][] = [
    [`parameters (${(params / 1e6).toFixed(0)}M, float32)`, mib(4 * params), mib(4 * params)],
    ['gradients (float32)', mib(4 * params), mib(4 * params)],
    ['AdamW moments m and v', mib(8 * params), mib(8 * params)],
    [
      `logits of the longest step (${tokens} tokens; rl2: ${rl2Logits} ${vocab}, PyTorch: the full ${vocab})`,
      mib(4 * tokens * rl2Rows),
      mib(4 * tokens * vocab),
    ],
  ];
  const known = (k: 1 | 2) => parts.reduce((a, p) => a + p[k], 0);
  console.log('\n| SFT peak RSS, where it goes (MiB) | rl2 | PyTorch 1.13 |\n| --- | --- | --- |');
  for (const [what, a, b] of parts) console.log(`| ${what} | ${a.toFixed(0)} | ${b.toFixed(0)} |`);
  console.log(
    '| the rest: activations kept for the backward, runtime, temporaries (peak minus the above) ' +
      `| ${(rl2Peak - known(1)).toFixed(0)} | ${(torchPeak - known(2)).toFixed(0)} |`,
  );
  console.log(`| measured peak | ${rl2Peak.toFixed(0)} | ${torchPeak.toFixed(0)} |`);
}

await main();
