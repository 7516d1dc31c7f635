/**
 * `pnpm bench algos [--rows 8] [--cols 1024]`
 *
 * On the tfjs cpu backend, times (median of 5, wall and process CPU):
 * - actorPpoLoss forward with its metrics (forward only: tfjs-core ships no gradients that
 *   plain Node can load, see the README), in token-mean and in packed
 *   seq-mean-token-mean (4 sequences per row), against a bare clipped surrogate written with
 *   the fewest tfjs ops (the reference: what the loss costs without metrics and layout work);
 * - computeGae (float64 scan on the action-only timelines, then whitening) against RL2's
 *   formulation, a reverse loop of tensor ops over the padded time axis.
 */
import '@tensorflow/tfjs-backend-cpu';
import * as tf from '@tensorflow/tfjs-core';
import { actorPpoLoss, computeGae } from '../src/index.js';

function arg(name: string, fallback: string): number {
  const i = process.argv.indexOf(`--${name}`);
  return Number(i >= 0 ? process.argv[i + 1] : fallback);
}

const rows = arg('rows', '8');
const cols = arg('cols', '1024');

function time(f: () => void): { ms: number; cpuMs: number } {
  f(); // warm up
  const walls: number[] = [];
  const cpus: number[] = [];
  for (let i = 0; i < 5; i++) {
    const c0 = process.cpuUsage();
    const t0 = performance.now();
    f();
    walls.push(performance.now() - t0);
    const c = process.cpuUsage(c0);
    cpus.push((c.user + c.system) / 1000);
  }
  const med = (xs: number[]) => xs.sort((a, b) => a - b)[2]!;
  return { ms: med(walls), cpuMs: med(cpus) };
}

async function main() {
  await tf.setBackend('cpu');
  const seeded = (seed: number) => tf.randomUniform([rows, cols], -2, 0, 'float32', seed);
  const logps = seeded(1);
  const oldLogps = tf.add(logps, tf.randomNormal([rows, cols], 0, 0.1, 'float32', 2));
  const advantages = tf.randomNormal([rows, cols], 0, 1, 'float32', 3);
  const actionMask = tf.cast(
    tf.greater(tf.randomUniform([rows, cols], 0, 1, 'float32', 4), 0.2),
    'float32',
  );
  const per = Math.ceil(cols / 4);
  const sequenceIds = tf.tensor2d(
    Array.from({ length: rows }, (_, r) =>
      Array.from({ length: cols }, (_, c) => r * 4 + Math.floor(c / per)),
    ),
    undefined,
    'int32',
  );
  const n = tf.sum(actionMask).dataSync()[0]!;

  const bare = (x: tf.Tensor) =>
    tf.tidy(() => {
      const ratio = tf.exp(tf.sub(x, oldLogps));
      const l = tf.maximum(
        tf.neg(tf.mul(advantages, ratio)),
        tf.neg(tf.mul(advantages, tf.clipByValue(ratio, 0.8, 1.2))),
      );
      return tf.div(tf.sum(tf.mul(l, actionMask)), n) as tf.Scalar;
    });
  const forward = (f: (x: tf.Tensor) => tf.Scalar) => () => f(logps).dispose();

  const table: { name: string; ms: number; cpuMs: number; ref: string }[] = [];
  const ref1 = time(forward(bare));
  table.push({ name: 'bare clipped surrogate (reference)', ...ref1, ref: 'ref1' });
  table.push({
    name: 'actorPpoLoss token-mean + metrics',
    ...time(forward((x) => actorPpoLoss({ logps: x, oldLogps, advantages, actionMask }).loss)),
    ref: 'ref1',
  });
  table.push({
    name: 'actorPpoLoss packed seq-mean-token-mean',
    ...time(
      forward(
        (x) =>
          actorPpoLoss(
            { logps: x, oldLogps, advantages, actionMask, sequenceIds },
            { aggregation: { mode: 'seq-mean-token-mean' } },
          ).loss,
      ),
    ),
    ref: 'ref1',
  });

  const rewards = tf.mul(tf.randomNormal([rows, cols], 0, 1, 'float32', 5), actionMask);
  const values = tf.randomNormal([rows, cols], 0, 1, 'float32', 6);
  const rl2Style = () =>
    tf
      .tidy(() => {
        // RL2: deltas on the padded tensor, then a reverse loop of tensor ops over T
        const next = tf.pad(tf.slice(values, [0, 1], [-1, -1]), [
          [0, 0],
          [0, 1],
        ]);
        const deltas = tf.sub(tf.add(rewards, next), values);
        let gae: tf.Tensor = tf.zeros([rows]);
        const out: tf.Tensor[] = [];
        for (let t = cols - 1; t >= 0; t--) {
          gae = tf.add(tf.squeeze(tf.slice(deltas, [0, t], [-1, 1]), [1]), gae);
          out.push(gae);
        }
        return tf.stack(out.reverse(), 1);
      })
      .dispose();
  const ref2 = time(rl2Style);
  table.push({ name: 'GAE as RL2: tensor-op loop over T (reference)', ...ref2, ref: 'ref2' });
  table.push({
    name: 'computeGae (float64 scan + whitening)',
    ...time(() => {
      const r = computeGae({ rewards, values, actionMask });
      tf.dispose([r.advantages, r.returns]);
    }),
    ref: 'ref2',
  });

  console.log(
    `@rl2/algos on tfjs cpu, [${rows}, ${cols}] per-token tensors, median of 5 (process CPU is steadier on a shared machine)`,
  );
  console.log('| case | wall ms | cpu ms | cpu vs reference |');
  console.log('| --- | ---: | ---: | ---: |');
  for (const r of table) {
    const base = r.ref === 'ref1' ? ref1 : ref2;
    console.log(
      `| ${r.name} | ${r.ms.toFixed(1)} | ${r.cpuMs.toFixed(1)} | ${(r.cpuMs / base.cpuMs).toFixed(2)}x |`,
    );
  }
}

main();
