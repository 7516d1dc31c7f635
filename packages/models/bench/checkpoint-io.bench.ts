// `pnpm bench checkpoint-io [--dir DIR] [--keep]`: loading and saving a Qwen3-0.6B-shaped
// checkpoint (hidden 1024, 28 layers, 16/8 heads of 128, MLP 3072, vocab 151936, tied embeddings:
// 596M parameters, 2.38 GB in float32) with the streaming safetensors reader and writer, next to
// PyTorch 1.13 (torch.load / torch.save of the same weights, scripts/bench_checkpoint_torch.py)
// in the same run. Each measurement runs in its own process, so its peak RSS (VmHWM) is its own.
// Needs ~7 GB of disk under DIR (default a temporary folder, removed unless --keep).
import { spawnSync } from 'node:child_process';
import { mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { initEngine } from '@rl2/engine';
import {
  CheckpointWriter,
  loadModel,
  paramShapes,
  parseModelConfig,
  saveModel,
} from '../src/index.js';
import { createModelConfigJson } from '../src/model/init-random-model.js';

const SPEC = {
  family: 'qwen3',
  vocabSize: 151936,
  hiddenSize: 1024,
  intermediateSize: 3072,
  numLayers: 28,
  numHeads: 16,
  numKvHeads: 8,
  headDim: 128,
  tieWordEmbeddings: true,
} as const;
const HERE = import.meta.dirname;
const args = process.argv.slice(2);
const at = args.indexOf('--dir');

/** Peak resident memory of this process so far (Linux VmHWM), bytes. */
const peakRss = () =>
  Number(/VmHWM:\s+(\d+) kB/.exec(readFileSync('/proc/self/status', 'utf8'))?.[1] ?? 0) * 1024;

/** One measured phase in this process: prints {seconds, peak_rss}. */
async function phase(name: string, dir: string): Promise<void> {
  await initEngine({ backend: 'cpu', logger: () => {} });
  const t0 = performance.now();
  if (name === 'write') {
    const config = parseModelConfig(createModelConfigJson(SPEC), 'bench spec');
    const specs = [...paramShapes(config)].map(([n, shape]) => ({ name: n, shape }));
    const w = CheckpointWriter.open(join(dir, 'fp32'), specs, { dtype: 'float32' });
    let x = 1;
    for (const s of specs) {
      const data = new Float32Array(s.shape.reduce((a, b) => a * b, 1));
      for (let i = 0; i < data.length; i++) {
        x = (x * 1103515245 + 12345) >>> 0;
        data[i] = (x / 2 ** 32 - 0.5) * 0.04;
      }
      w.write(s.name, data);
    }
    w.writeJson('config.json', createModelConfigJson(SPEC));
    w.commit();
  } else {
    const [, from, to, dtype] = /^(fp32|bf16)(?:->(\w+):(\w+))?$/.exec(name) ?? [];
    const { model } = await loadModel(join(dir, from as string));
    if (to)
      await saveModel(join(dir, to), model, {
        dtype: dtype as 'bfloat16' | 'float32',
        maxShardSize: '1GB',
      });
  }
  console.log(JSON.stringify({ seconds: (performance.now() - t0) / 1000, peak_rss: peakRss() }));
}

function run(command: string, argv: string[]): { seconds: number; peak_rss: number } {
  const r = spawnSync(command, argv, { encoding: 'utf8', stdio: ['ignore', 'pipe', 'inherit'] });
  const line = r.stdout.trim().split('\n').at(-1) ?? '';
  if (r.status !== 0 || !line.startsWith('{'))
    throw new Error(`${command} ${argv.join(' ')} failed (${r.status}): ${r.stdout}`);
  return JSON.parse(line);
}

const self = (name: string, dir: string) =>
  run(process.execPath, [
    '--import',
    'tsx',
    join(HERE, 'checkpoint-io.bench.ts'),
    '--phase',
    name,
    '--dir',
    dir,
  ]);
const torch = (name: string, dir: string) =>
  run('/usr/bin/python3', [join(HERE, '..', 'scripts', 'bench_checkpoint_torch.py'), name, dir]);

async function main(): Promise<void> {
  const dir = at >= 0 ? (args[at + 1] as string) : mkdtempSync(join(tmpdir(), 'rl2-bench-ckpt-'));
  const params = [
    ...paramShapes(parseModelConfig(createModelConfigJson(SPEC), 'bench spec')).values(),
  ].reduce((s, sh) => s + sh.reduce((a, b) => a * b, 1), 0);
  const fp32 = params * 4;
  const gib = (b: number) => (b / 2 ** 30).toFixed(2);
  console.log(
    `Qwen3-0.6B shape: ${(params / 1e6).toFixed(0)}M parameters, ${gib(fp32)} GiB in float32; folder ${dir}`,
  );
  try {
    const made = self('write', dir);
    console.log(
      `wrote fp32 model.safetensors in ${made.seconds.toFixed(1)} s, peak RSS ${gib(made.peak_rss)} GiB`,
    );
    torch('convert', dir);
    const rows: [string, ReturnType<typeof self>, string, ReturnType<typeof torch>][] = [
      ['load fp32 (2.4 GB file)', self('fp32', dir), 'torch.load fp32 .pt', torch('load', dir)],
      [
        'load fp32 + save bf16 shards (1GB)',
        self('fp32->bf16:bfloat16', dir),
        'torch.load + .bfloat16() + torch.save',
        torch('load-save-bf16', dir),
      ],
      [
        'load fp32 + save fp32',
        self('fp32->fp32b:float32', dir),
        'torch.load + torch.save',
        torch('load-save', dir),
      ],
      [
        'load bf16 shards as fp32',
        self('bf16', dir),
        'torch.load bf16 .pt + .float()',
        torch('load-bf16', dir),
      ],
    ];
    console.log(
      '\n| rl2 | s | peak RSS GiB | / fp32 params | PyTorch 1.13 | s | peak RSS GiB | rl2 / torch peak |',
    );
    console.log('|---|---|---|---|---|---|---|---|');
    for (const [name, a, ref, b] of rows) {
      console.log(
        `| ${name} | ${a.seconds.toFixed(1)} | ${gib(a.peak_rss)} ` +
          `| ${(a.peak_rss / fp32).toFixed(2)}x | ${ref} | ${b.seconds.toFixed(1)} ` +
          `| ${gib(b.peak_rss)} | ${(a.peak_rss / b.peak_rss).toFixed(2)}x |`,
      );
    }
  } finally {
    if (!args.includes('--keep')) rmSync(dir, { recursive: true, force: true });
  }
}

const p = args.indexOf('--phase');
if (p >= 0) await phase(args[p + 1] as string, args[at + 1] as string);
else await main();
