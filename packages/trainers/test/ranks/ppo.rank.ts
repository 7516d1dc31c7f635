// Run by test/ppo-parallel.test.ts (and pnpm bench ppo-memory) under launch(): `rl2 ppo` with the
// JSON list of config overrides in PPO_OVERRIDES on this rank (the data-parallel world comes from
// the launcher's env). Prints `RESULT {"rank", "steps": [metrics of every step], "tensorBytes",
// "backend", "blockingReads"}`, tensorBytes: the most tensor memory this rank held at the end of a
// step (tf.memory()); the tfjs backend at the end; reads that waited for a GPU (@rl2/engine).
import { blockingReads } from '@rl2/engine';
import * as tf from '@tensorflow/tfjs-core';
import { loadConfig, ppoConfigSchema, runPpo } from '../../src/index.js';

const overrides = JSON.parse(process.env.PPO_OVERRIDES ?? '[]') as string[];
const steps: Record<string, number>[] = [];
let tensorBytes = 0;
await runPpo(loadConfig(ppoConfigSchema, { overrides }), {
  stdout: { write: () => true } as unknown as NodeJS.WriteStream,
  onStep: (r) => {
    steps.push({ ...r });
    tensorBytes = Math.max(tensorBytes, tf.memory().numBytes);
  },
});
const rank = Number(process.env.RANK);
const backend = tf.getBackend();
console.log(
  `RESULT ${JSON.stringify({ rank, steps, tensorBytes, backend, blockingReads: blockingReads() })}`,
);
