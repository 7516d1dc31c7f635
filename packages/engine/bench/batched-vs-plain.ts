// The batched-vs-plain rows of `pnpm bench engine`: batched [4, 512, 256] x [4, 256, 512], forward
// and the two products its gradient runs (batch-mat-mul-grad.ts: dA = g b^T, dB = a^T g), against
// the plain 512^3 product, in R alternating rounds (the order flips each round); each figure is
// the fastest call of its round (the machine is shared), the table the median of the rounds.
import * as tf from '@tensorflow/tfjs-core';

interface Product {
  label: string;
  a: number[];
  b: number[];
  ta: boolean;
  tb: boolean;
  flops: number;
}
const F = 2 * 4 * 512 * 512 * 256;
const PRODUCTS: Product[] = [
  {
    label: 'plain      [512,512] x [512,512]',
    a: [512, 512],
    b: [512, 512],
    ta: false,
    tb: false,
    flops: 2 * 512 ** 3,
  },
  {
    label: 'batched    [4,512,256] x [4,256,512]',
    a: [4, 512, 256],
    b: [4, 256, 512],
    ta: false,
    tb: false,
    flops: F,
  },
  {
    label: 'grad dA    [4,512,512] x [4,256,512]^T',
    a: [4, 512, 512],
    b: [4, 256, 512],
    ta: false,
    tb: true,
    flops: F,
  },
  {
    label: 'grad dB    [4,512,256]^T x [4,512,512]',
    a: [4, 512, 256],
    b: [4, 512, 512],
    ta: true,
    tb: false,
    flops: F,
  },
];

function fastestGflops(p: Product, seconds: number): number {
  const a = tf.randomNormal(p.a);
  const b = tf.randomNormal(p.b);
  tf.matMul(a, b, p.ta, p.tb).dispose(); // warm-up
  let best = Number.POSITIVE_INFINITY;
  const t0 = performance.now();
  let reps = 0;
  while (performance.now() - t0 < seconds * 1000 || reps < 3) {
    const t = performance.now();
    const c = tf.matMul(a, b, p.ta, p.tb);
    c.dataSync();
    best = Math.min(best, performance.now() - t);
    c.dispose();
    reps++;
  }
  tf.dispose([a, b]);
  return p.flops / (best / 1000) / 1e9;
}

const median = (xs: number[]) => {
  const s = [...xs].sort((x, y) => x - y);
  return s.length % 2 ? s[s.length >> 1]! : (s[s.length / 2 - 1]! + s[s.length / 2]!) / 2;
};

/** Prints the table: GFLOP/s median [min-max] per product and its ratio to plain (each round). */
export function batchedVsPlain(rounds: number, threads: number): void {
  const runs: number[][] = PRODUCTS.map(() => []);
  for (let r = 0; r < rounds; r++) {
    const order = PRODUCTS.map((_, i) => i);
    if (r % 2 === 1) order.reverse();
    for (const i of order) runs[i]!.push(fastestGflops(PRODUCTS[i]!, 0.3));
  }
  console.log(
    `\nbatched vs plain on native, ${threads} thread(s), ${rounds} alternating rounds (goal: batched within 1.2x of plain)`,
  );
  console.log(
    `${'product'.padEnd(42)}${'GFLOP/s median [min-max]'.padEnd(28)}plain / this (each round)`,
  );
  const plain = runs[0]!;
  PRODUCTS.forEach((p, i) => {
    const xs = runs[i]!;
    const range = `${median(xs).toFixed(1)} [${Math.min(...xs).toFixed(1)}-${Math.max(...xs).toFixed(1)}]`;
    const each = xs.map((x, r) => (plain[r]! / x).toFixed(2)).join(', ');
    console.log(
      `${p.label.padEnd(42)}${range.padEnd(28)}${(median(plain) / median(xs)).toFixed(2)}x (${each})`,
    );
  });
}
