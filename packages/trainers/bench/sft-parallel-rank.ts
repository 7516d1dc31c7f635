// One rank of bench/sft-parallel.bench.ts: the examples/addition SFT config on the bench's tiny
// model for BENCH_STEPS steps. Prints `RESULT {"rank", "engine", "steps": [{tokensPerSecond, loss}], "tensorBytes"}`.
import { join, resolve } from 'node:path';
import { loadConfig, runSft, sftConfigSchema } from '@rl2/trainers';
import * as tf from '@tensorflow/tfjs-core';

const root = resolve(import.meta.dirname, '../../..');
const { BENCH_DIR, BENCH_STEPS } = process.env as Record<string, string>;
const config = loadConfig(sftConfigSchema, {
  configFile: join(root, 'examples/addition/sft.yaml'),
  overrides: [
    `data.train.path=${join(root, 'examples/addition/data/sft-train.jsonl')}`,
    `data.test.path=${join(root, 'examples/addition/data/sft-test.jsonl')}`,
    `actor.model_name=${join(BENCH_DIR, 'model')}`,
    `trainer.max_steps=${BENCH_STEPS}`,
    `trainer.save_dir=${join(BENCH_DIR, `run-${process.env.WORLD_SIZE}-${process.env.BENCH_LAYOUT}`)}`,
    'trainer.val_before_train=false',
    'trainer.test_freq=null',
    'trainer.progress=none',
    'trainer.use_tensorboard=false',
    'trainer.report=false',
    ...(JSON.parse(process.env.BENCH_OVERRIDES ?? '[]') as string[]),
  ],
});
const steps: { tokensPerSecond: number; loss: number }[] = [];
let engine = '';
const out = {
  write: (s: string) => {
    if (!engine) engine = /rl2 engine: (.*)/.exec(s)?.[1] ?? '';
    return true;
  },
} as unknown as NodeJS.WriteStream;
// tensor bytes held between steps: the parameters and AdamW moments as this rank keeps them
let tensorBytes = 0;
await runSft(config, {
  stdout: out,
  onStep: (r) => {
    steps.push({
      tokensPerSecond: r['train/tokens_per_s'] as number,
      loss: r['train/loss'] as number,
    });
    tensorBytes = tf.memory().numBytes;
  },
});
console.log(
  `RESULT ${JSON.stringify({ rank: Number(process.env.RANK), engine, steps, tensorBytes })}`,
);
