// `pnpm bench attention [--threads N] [--rounds R]`: the native addon's two causal attention
// kernels, forward + backward per call, at the tiny Llama's heads (4 of 64) over batch x length
// shapes from short rows to one long one: `flashAttention` (tiled, online softmax, what training
// and prefill use) and `attention` (one [S, L] score block per head and an additive [B, S, S]
// mask, the kernel before it). CPU milliseconds of the process per call, best of R rounds
// (robust to a busy machine), and their ratio. The tile size is TILE in
// native/fused-flash-attention.c; rebuild (`pnpm --filter @rl2/engine build`) to compare others.
import { loadNativeAddon } from '../src/native-addon.js';
import { numberOption } from './bench-option.js';

const threads = numberOption('threads', 1);
const rounds = numberOption('rounds', 15);
const HEADS = 4;
const D = 64;
const SHAPES: [batch: number, length: number][] = [
  [16, 128],
  [8, 256],
  [32, 256],
  [4, 512],
  [1, 2048],
];

const load = loadNativeAddon(process.env);
if (!load.ok) {
  console.error(`attention bench: no native addon (${load.reason})`);
  process.exit(1);
}
const addon = load.addon;
addon.setThreads(threads);

/** Uniform values in [-0.5, 0.5) from a fixed LCG. */
function values(n: number, seed: number): Float32Array {
  let x = seed;
  return Float32Array.from({ length: n }, () => {
    x = (Math.imul(x, 1664525) + 1013904223) >>> 0;
    return x / 2 ** 32 - 0.5;
  });
}

function cpuMs(run: () => void): number {
  const c0 = process.cpuUsage();
  run();
  const c = process.cpuUsage(c0);
  return (c.user + c.system) / 1e3;
}

function measure(b: number, t: number): { flash: number; masked: number } {
  const q = values(b * t * HEADS * D, 1);
  const k = values(b * HEADS * t * D, 2);
  const v = values(b * HEADS * t * D, 3);
  const dout = values(q.length, 4);
  const out = new Float32Array(q.length);
  const lse = new Float32Array(b * HEADS * t);
  const dq = new Float32Array(q.length);
  const dk = new Float32Array(k.length);
  const dv = new Float32Array(v.length);
  const seg = new Int32Array(b * t);
  const none = new Int32Array(0);
  const mask = new Float32Array(b * t * t);
  for (let r = 0; r < b; r++)
    for (let i = 0; i < t; i++) mask.fill(-1e9, (r * t + i) * t + i + 1, (r * t + i + 1) * t);
  const scale = 1 / Math.sqrt(D);
  const flashDims = Int32Array.of(b, t, HEADS, HEADS, D);
  const maskedDims = Int32Array.of(b, t, t, HEADS, HEADS, D, b);
  const flash = () => {
    addon.flashAttention(q, k, v, seg, flashDims, scale, out, lse, none);
    addon.flashAttentionGrad(q, k, v, seg, flashDims, scale, out, lse, dout, dq, dk, dv, none);
  };
  const masked = () => {
    addon.attention(q, k, v, mask, maskedDims, scale, out);
    addon.attentionGrad(q, k, v, mask, maskedDims, scale, dout, dq, dk, dv);
  };
  const best = { flash: Number.POSITIVE_INFINITY, masked: Number.POSITIVE_INFINITY };
  for (let i = 0; i < rounds; i++) {
    best.flash = Math.min(best.flash, cpuMs(flash));
    best.masked = Math.min(best.masked, cpuMs(masked));
  }
  return best;
}

console.log(
  `attention bench: causal, ${HEADS} heads of ${D}, forward + backward, ${threads} thread(s), CPU ms per call (best of ${rounds})`,
);
const rows = SHAPES.map(([b, t]) => {
  const m = measure(b, t);
  return [
    `${b} x ${t}`,
    m.flash.toFixed(1),
    m.masked.toFixed(1),
    `${(m.flash / m.masked).toFixed(2)}x`,
  ];
});
const head = [
  'batch x length',
  'tiled (flashAttention)',
  'one block + mask (attention)',
  'tiled / one block',
];
const widths = head.map((h, i) => Math.max(h.length, ...rows.map((r) => r[i]!.length)));
const line = (r: string[]) => `| ${r.map((c, i) => c.padEnd(widths[i]!)).join(' | ')} |`;
console.log([line(head), line(widths.map((w) => '-'.repeat(w))), ...rows.map(line)].join('\n'));
