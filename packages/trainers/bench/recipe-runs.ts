/**
 * The recipe runs behind `pnpm bench recipes` and `pnpm bench recipes-real`: per seed, a tiny
 * Qwen3 from `init-model --seed`, SFT on the task, then each recipe's `rl2 ppo` from that
 * checkpoint; the greedy test reward and sampled train reward per step as an HTML chart (mean,
 * min-max over seeds) and a Markdown table. Needs a build (apps/cli/dist).
 */
import { spawnSync } from 'node:child_process';
import { existsSync, mkdirSync, readFileSync, writeFileSync } from 'node:fs';
import { cpus, loadavg } from 'node:os';
import { join, resolve } from 'node:path';

export interface Recipe {
  label: string;
  keys: string[];
}

/** A task: its SFT and GRPO configs (examples/<task>/*.yaml) and how often RL tests. */
export interface RecipeTask {
  title: string;
  sft: string;
  grpo: string;
  testFreq: number;
  /** `rl2 init-model` size flags; default a 2-layer, hidden-64 Qwen3. */
  modelFlags?: string[];
  /** Where the runs and the HTML go, under the repository root. */
  out: string;
}

const root = resolve(import.meta.dirname, '..', '..', '..');
const cli = join(root, 'apps', 'cli', 'dist', 'cli.js');

/** Runs every recipe for every seed (`--seeds=0,1,2`, `--recipes=a,b`, `ppo.KEY=VALUE` overrides). */
export function benchRecipes(
  task: RecipeTask,
  recipes: Record<string, Recipe>,
  args: string[],
): void {
  if (!existsSync(cli)) {
    console.error('recipes: apps/cli/dist/cli.js is missing; run `pnpm build` first');
    process.exit(1);
  }
  const opt = (name: string) =>
    args.find((x) => x.startsWith(`--${name}=`))?.slice(name.length + 3);
  const seeds = (opt('seeds') ?? '0,1,2').split(',').map(Number);
  const names = (opt('recipes') ?? Object.keys(recipes).join(',')).split(',');
  for (const n of names)
    if (!recipes[n]) throw new Error(`unknown recipe "${n}" (${Object.keys(recipes).join(', ')})`);
  const extra = args.filter((x) => x.startsWith('ppo.')).map((x) => x.slice(4));
  const startLoad = loadavg()[0] as number;
  const runs = new Map<string, Run[]>();
  for (const seed of seeds) runSeed(task, seed, names, recipes, extra, runs);
  const header =
    `${task.title}, ${new Date().toISOString().slice(0, 16)} UTC, ${cpus().length} cores, ` +
    `${cpus()[0]?.model.trim()}, seeds ${seeds.join(', ')}, load ${startLoad.toFixed(1)} at the start and ` +
    `${(loadavg()[0] as number).toFixed(1)} at the end`;
  report(
    task,
    header,
    names.map((n) => ({ name: n, recipe: recipes[n] as Recipe, runs: runs.get(n) ?? [] })),
  );
}

function rl2(argv: string[]): number {
  const t0 = performance.now();
  const r = spawnSync(process.execPath, [cli, ...argv], {
    cwd: root,
    stdio: ['ignore', 'ignore', 'inherit'],
  });
  if (r.status !== 0) throw new Error(`rl2 ${argv.join(' ')} failed with exit code ${r.status}`);
  return (performance.now() - t0) / 1000;
}

const quiet = ['trainer.progress=none', 'trainer.use_tensorboard=false', 'trainer.report=false'];
type Curve = Array<[number, number]>;
interface Run {
  test: Curve;
  train: Curve;
  seconds: number;
}

/** One seed: the tiny model, its SFT, then each recipe's RL run from that checkpoint. */
function runSeed(
  task: RecipeTask,
  seed: number,
  names: string[],
  recipes: Record<string, Recipe>,
  extra: string[],
  runs: Map<string, Run[]>,
): void {
  const dir = join(task.out, `seed-${seed}`);
  rl2([
    'init-model',
    '--arch',
    'qwen3',
    '--tokenizer',
    'examples/addition/tokenizer',
    '--out',
    join(dir, 'tiny-qwen3'),
    ...(task.modelFlags ?? ['--hidden-size', '64', '--layers', '2', '--heads', '4']),
    '--seed',
    String(seed),
  ]);
  rl2([
    'sft',
    '--config',
    task.sft,
    `actor.model_name=${dir}/tiny-qwen3`,
    `trainer.save_dir=${dir}/sft`,
    `trainer.seed=${seed}`,
    ...quiet,
  ]);
  for (const name of names) {
    const save = join(dir, name);
    const seconds = rl2([
      'ppo',
      '--config',
      task.grpo,
      `actor.model_name=${dir}/sft/latest/model`,
      `trainer.save_dir=${save}`,
      `trainer.seed=${seed}`,
      `trainer.test_freq=${task.testFreq}`,
      'rollout.save_rollouts=false',
      ...quiet,
      ...(recipes[name]?.keys ?? []),
      ...extra,
    ]);
    const records = readFileSync(join(root, save, 'metrics.jsonl'), 'utf8')
      .split('\n')
      .filter(Boolean)
      .map((line) => JSON.parse(line) as Record<string, number>);
    const pick = (key: string): Curve =>
      records
        .filter((r) => typeof r[key] === 'number')
        .map((r) => [r.step as number, r[key] as number]);
    const run = { test: pick('test/reward/mean'), train: pick('train/reward/mean'), seconds };
    runs.set(name, [...(runs.get(name) ?? []), run]);
    console.log(
      `seed ${seed} ${recipes[name]?.label}: test reward ${run.test.map(([, v]) => v.toFixed(3)).join(' -> ')} (${seconds.toFixed(0)} s)`,
    );
  }
}

/** Mean, min and max over seeds at each step all runs logged. */
function band(curves: Curve[]): Array<[number, number, number, number]> {
  const steps = (curves[0] ?? [])
    .map(([s]) => s)
    .filter((s) => curves.every((c) => c.some(([t]) => t === s)));
  return steps.map((s) => {
    const vs = curves.map((c) => (c.find(([t]) => t === s) as [number, number])[1]);
    return [s, vs.reduce((a, b) => a + b, 0) / vs.length, Math.min(...vs), Math.max(...vs)];
  });
}
const colors = ['#1f77b4', '#ff7f0e', '#2ca02c', '#d62728', '#9467bd'];
function chart(all: RecipeRuns[], title: string, key: 'test' | 'train'): string {
  const [w, h, pad] = [560, 300, 40];
  const bands = all.map((a) => band(a.runs.map((r) => r[key])));
  const maxStep = Math.max(1, ...bands.flat().map(([s]) => s));
  const x = (s: number) => pad + ((w - 2 * pad) * s) / maxStep;
  const y = (v: number) => h - pad - (h - 2 * pad) * Math.max(0, Math.min(1, v));
  const parts = bands.map((b, i) => {
    const c = colors[i % colors.length];
    const area = [
      ...b.map(([s, , lo]) => `${x(s)},${y(lo)}`),
      ...[...b].reverse().map(([s, , , hi]) => `${x(s)},${y(hi)}`),
    ].join(' ');
    const line = b.map(([s, m]) => `${x(s)},${y(m)}`).join(' ');
    return (
      `<polygon points="${area}" fill="${c}" fill-opacity="0.15" stroke="none"/><polyline ` +
      `points="${line}" fill="none" stroke="${c}" stroke-width="2"/>`
    );
  });
  const grid = [0, 0.25, 0.5, 0.75, 1].map(
    (v) =>
      `<line x1="${pad}" x2="${w - pad}" y1="${y(v)}" y2="${y(v)}" stroke="#ddd"/><text ` +
      `x="${pad - 6}" y="${y(v) + 4}" text-anchor="end" font-size="11">${v}</text>`,
  );
  const legend = all.map(
    (a, i) =>
      `<text x="${pad + 8}" y="${pad + 14 * i + 4}" font-size="11" fill="${colors[i % colors.length]}">${a.recipe.label}</text>`,
  );
  return (
    `<figure><svg width="${w}" height="${h}" ` +
    `xmlns="http://www.w3.org/2000/svg">${grid.join('')}<text x="${w / 2}" y="${h - 8}" ` +
    `text-anchor="middle" font-size="11">step ` +
    `(0..${maxStep})</text>${parts.join('')}${legend.join('')}</svg><figcaption>${title}</figcaption></figure>`
  );
}

const stats = (vs: number[]) => {
  const m = vs.reduce((a, b) => a + b, 0) / vs.length;
  return {
    mean: m,
    sd: Math.sqrt(vs.reduce((a, b) => a + (b - m) ** 2, 0) / Math.max(1, vs.length - 1)),
  };
};

/** One recipe's runs, one per seed. */
interface RecipeRuns {
  name: string;
  recipe: Recipe;
  runs: Run[];
}

/** The Markdown table on stdout and the HTML report (charts and table) under task.out. */
function report(task: RecipeTask, header: string, all: RecipeRuns[]): void {
  const tableRows = all.map(({ recipe, runs: rs }) => {
    const first = stats(rs.map((r) => r.test[0]?.[1] ?? Number.NaN));
    const last = stats(rs.map((r) => r.test[r.test.length - 1]?.[1] ?? Number.NaN));
    const secs = stats(rs.map((r) => r.seconds));
    return [
      recipe.label,
      first.mean.toFixed(3),
      `${last.mean.toFixed(3)} ± ${last.sd.toFixed(3)}`,
      rs.map((r) => (r.test[r.test.length - 1]?.[1] ?? Number.NaN).toFixed(3)).join(' / '),
      `${secs.mean.toFixed(0)} s`,
    ];
  });
  const cols = [
    'recipe',
    'greedy test reward after SFT (mean)',
    'after RL (mean ± sd over seeds)',
    'per seed',
    'RL wall time (mean)',
  ];
  const markdown = [
    `| ${cols.join(' | ')} |`,
    `| --- |${' ---: |'.repeat(cols.length - 1)}`,
    ...tableRows.map((r) => `| ${r.join(' | ')} |`),
  ].join('\n');
  const style =
    'body{font-family:sans-serif;margin:2em}figure{display:inline-block;margin:1em}' +
    'table{border-collapse:collapse}td,th{border:1px solid #ccc;padding:4px 8px;text-align:right}' +
    'td:first-child{text-align:left}';
  const th = cols.map((c) => `<th>${c}</th>`).join('');
  const td = tableRows.map((r) => `<tr>${r.map((c) => `<td>${c}</td>`).join('')}</tr>`).join('');
  const html =
    `<!doctype html><html><head><meta charset="utf-8"><title>rl2 recipes</title>` +
    `<style>${style}</style></head><body><h1>rl2 recipes: ${task.title}</h1>` +
    `<p>${header}. Lines: mean over seeds; bands: min to max.</p>` +
    chart(all, 'greedy test reward (test/reward/mean)', 'test') +
    chart(all, 'sampled train reward (train/reward/mean)', 'train') +
    `<table><tr>${th}</tr>${td}</table></body></html>\n`;
  mkdirSync(join(root, task.out), { recursive: true });
  writeFileSync(join(root, task.out, 'recipes.html'), html);
  console.log(`\n${header}\n\n${markdown}\n\nwrote ${join(task.out, 'recipes.html')}`);
}
