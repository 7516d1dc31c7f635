import { spawnSync } from 'node:child_process';
import { readFileSync } from 'node:fs';
import { beforeAll, describe, expect, it } from 'vitest';
import { initEngine } from '../init-engine.js';
import { activeNativeAddon } from '../native-backend.js';
import { nativeForTests } from '../testing/native-for-tests.js';
import { bf16Bits, bf16Value, f16Bits, f16Value, values } from '../testing/sixteen-bit-values.js';
import { decodeKernels, type WeightDtype } from './fused-decode.js';

// The decode-step products (native/decode-linear.c) against a float64 product written here,
// for float32, bfloat16 and float16 weights, batch sizes on both sides of the register tiles
// (4 x 3) and of the sgemm cut (64 rows; panels of W above), widths that leave vector tails; and a layer with
// 16-bit weights against the same layer given those weights widened to float32. Where the CPU has
// AVX512_BF16, bfloat16 weights meet x rounded to bfloat16 (the dot-product tiles), and so does
// the reference.
const native = nativeForTests();
const hasNative = native.ok;

/** y [rows, out] = x w^T in float64 from the weights' values. */
function reference(
  x: Float32Array,
  w: number[],
  rows: number,
  inF: number,
  outF: number,
): Float64Array {
  const y = new Float64Array(rows * outF);
  for (let r = 0; r < rows; r++)
    for (let j = 0; j < outF; j++) {
      let s = 0;
      for (let k = 0; k < inF; k++) s += x[r * inF + k]! * w[j * inF + k]!;
      y[r * outF + j] = s;
    }
  return y;
}

/** Largest |a - b| / (1 + |b|). */
function relErr(a: Float32Array, b: Float64Array): number {
  let m = 0;
  for (let i = 0; i < b.length; i++)
    m = Math.max(m, Math.abs(a[i]! - b[i]!) / (1 + Math.abs(b[i]!)));
  return m;
}

/** The weights of `dtype` (Float32Array, or Uint16Array bits) and the values they stand for. */
function weightsOf(
  dtype: WeightDtype,
  n: number,
  seed: number,
): { w: Float32Array | Uint16Array; vals: number[] } {
  const f = values(n, seed);
  if (dtype === 'float32') return { w: f, vals: [...f] };
  if (dtype === 'bfloat16') {
    const w = Uint16Array.from(f, bf16Bits);
    return { w, vals: [...w].map(bf16Value) };
  }
  const w = Uint16Array.from(f, (v) => f16Bits(Math.round(v * 1024) / 1024));
  return { w, vals: [...w].map(f16Value) };
}

describe.skipIf(!hasNative)('decode-step products', () => {
  beforeAll(async () => {
    await initEngine({ backend: 'native', threads: 2, logger: () => {}, env: {} });
  });

  const shapes: [number, number, number][] = [
    [1, 64, 40],
    [3, 37, 9],
    [5, 130, 67],
    [8, 96, 129],
    [64, 48, 33],
    [65, 20, 7],
    // whole 16- and 32-column steps at 1, 2, 4 and 7 rows (every tile height), and more than one
    // panel of W above the skinny cut
    [1, 1024, 40],
    [2, 256, 33],
    [4, 160, 9],
    [7, 48, 70],
    [130, 70, 300],
    // a prefill's rows in more than one pass over each block of W (the dot tiles take ~256 KiB of x a pass)
    [300, 512, 40],
    // the lane tiles (32 rows and more): an odd width, a part-filled group of 16 rows, W rows past a 48-row block
    [33, 37, 101],
    [47, 1024, 53],
  ];
  for (const dtype of ['float32', 'bfloat16', 'float16'] as const)
    it.each(shapes)(
      `${dtype}: rows %i, in %i, out %i within 1e-5 of a float64 product`,
      (rows, inF, outF) => {
        const k = decodeKernels()!;
        const x = values(rows * inF, rows + inF);
        const { w, vals } = weightsOf(dtype, outF * inF, outF);
        const y = new Float32Array(rows * outF).fill(Number.NaN);
        k.linear(x, w, dtype, rows, inF, outF, y);
        const dot =
          dtype === 'bfloat16' && activeNativeAddon()!.decodeProducts() === 'avx512-bf16-dot';
        const xr = dot ? Float32Array.from(x, (v) => bf16Value(bf16Bits(v))) : x;
        expect(relErr(y, reference(xr, vals, rows, inF, outF))).toBeLessThan(1e-5);
      },
    );

  it('1 and 2 threads give the same products (the pool splits rows of W, never a dot product)', async () => {
    const k = decodeKernels()!;
    const x = values(8 * 300, 1);
    const w = values(1000 * 300, 2);
    const y1 = new Float32Array(8 * 1000);
    const y2 = new Float32Array(8 * 1000);
    await initEngine({ backend: 'native', threads: 1, logger: () => {}, env: {} });
    k.linear(x, w, 'float32', 8, 300, 1000, y1);
    await initEngine({ backend: 'native', threads: 2, logger: () => {}, env: {} });
    for (let i = 0; i < 50; i++) k.linear(x, w, 'float32', 8, 300, 1000, y2);
    expect([...y2]).toEqual([...y1]);
  });

  const linuxX64 = process.platform === 'linux' && process.arch === 'x64';
  it.skipIf(!linuxX64 || process.env.RL2_DECODE_ISA)(
    'takes the bfloat16 dot-product tiles wherever the CPU has AVX512_BF16',
    () => {
      const cpu = readFileSync('/proc/cpuinfo', 'utf8');
      const want =
        /\bavx512_bf16\b/.test(cpu) && /\bavx512bw\b/.test(cpu) && /\bavx512vl\b/.test(cpu);
      expect(decodeKernels()!.products() === 'avx512-bf16-dot').toBe(want);
    },
  );

  it('names the weight dtypes it takes when given another, or a mismatched array', () => {
    const addon = activeNativeAddon()!;
    const y = new Float32Array(2);
    expect(() => addon.linear(new Float32Array(2), new Float32Array(4), 3, 1, 2, 2, y)).toThrow(
      /weightDtype must be 0 \(float32\), 1 \(bfloat16\) or 2 \(float16\)/,
    );
    expect(() => addon.linear(new Float32Array(2), new Uint16Array(4), 0, 1, 2, 2, y)).toThrow(
      /w a Float32Array \(weightDtype 0\) or Uint16Array \(1, 2\)/,
    );
    expect(() => addon.linear(new Float32Array(2), new Uint16Array(3), 1, 1, 2, 2, y)).toThrow(
      /too short/,
    );
  });

  it('the AVX2 and plain C tiles give the AVX-512 FMA products (RL2_DECODE_ISA)', () => {
    // each ISA in a child process (the tile is picked once per process)
    const script = `
      const a = require(${JSON.stringify(native.ok ? native.path : '')});
      a.setThreads(2);
      const n = 5 * 131, x = new Float32Array(n), w = new Uint16Array(70 * 131), y = new Float32Array(5 * 70);
      for (let i = 0; i < n; i++) x[i] = Math.sin(i);
      for (let i = 0; i < w.length; i++) w[i] = 0x3f80 + (i % 97);
      a.linear(x, w, 1, 5, 131, 70, y);
      process.stdout.write(JSON.stringify({ isa: a.decodeProducts(), y: Array.from(y) }));`;
    const run = (isa: string) => {
      const r = spawnSync(process.execPath, ['-e', script], {
        env: { ...process.env, RL2_DECODE_ISA: isa },
        encoding: 'utf8',
      });
      expect(r.status, r.stderr).toBe(0);
      const out = JSON.parse(r.stdout) as { isa: string; y: number[] };
      expect(out.isa === isa || isa === 'avx512').toBe(true);
      return out.y;
    };
    const best = run('avx512'); // the widest FMA tiles, x as float32 (no dot products)
    for (const isa of ['avx2', 'c']) {
      const other = run(isa);
      other.forEach((v, i) => {
        expect(Math.abs(v - best[i]!)).toBeLessThan(1e-5 * (1 + Math.abs(best[i]!)));
      });
    }
  });
});
