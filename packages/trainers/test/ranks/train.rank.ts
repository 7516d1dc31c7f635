// Run by test/data-parallel.test.ts (and bench/sft-parallel.bench.ts) under launch(): the tiny
// run of train-case.ts (CASE_KIND sft or dpo) on this rank.
// Prints `RESULT {"rank", "steps": [{loss, gradNorm, microBatches, tokensPerSecond}], "backend",
// "engine", "frozenShard", "blockingReads"}`: the tfjs backend active at the end, the run's
// `rl2 engine:` line, its line about this rank's shard of a 16-bit LoRA base (tp) and how many
// reads waited for a GPU (host collectives inside a pass).
import { blockingReads } from '@rl2/engine';
import * as tf from '@tensorflow/tfjs-core';
import { runDpo, runSft } from '../../src/index.js';
import { type CaseKind, caseConfig } from '../train-case.js';

const { CASE_DIR, SAVE_DIR, CASE_OVERRIDES } = process.env;
const kind = (process.env.CASE_KIND ?? 'sft') as CaseKind;
const steps: { loss: number; gradNorm: number; microBatches: number; tokensPerSecond: number }[] =
  [];
const printed: string[] = [];
const quiet = { write: (s: string) => printed.push(s) > 0 } as unknown as NodeJS.WriteStream;
const io = {
  stdout: quiet,
  onStep: (r: Record<string, number>) =>
    steps.push({
      loss: r['train/loss'] as number,
      gradNorm: r['train/grad_norm'] as number,
      microBatches: r['train/micro_batches'] as number,
      tokensPerSecond: r['train/tokens_per_s'] as number,
    }),
};
const overrides = JSON.parse(CASE_OVERRIDES ?? '[]') as string[];
if (kind === 'sft')
  await runSft(caseConfig('sft', CASE_DIR as string, SAVE_DIR as string, overrides), io);
else await runDpo(caseConfig('dpo', CASE_DIR as string, SAVE_DIR as string, overrides), io);
const lines = printed.join('').split('\n');
const engine = lines.find((l) => l.startsWith('rl2 engine:'));
const frozenShard = lines.find((l) => l.includes('LoRA base tp rank'));
const rank = Number(process.env.RANK);
const backend = tf.getBackend();
console.log(
  `RESULT ${JSON.stringify({ rank, steps, backend, engine, frozenShard, blockingReads: blockingReads() })}`,
);
