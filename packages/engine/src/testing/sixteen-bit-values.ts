// Test inputs for the 16-bit weight kernels (decode, frozen products): a deterministic stream of
// values, and bfloat16 / float16 bits and values written out here on purpose, independent of the
// engine's own conversions, so a test compares the kernels with a reference they do not share.

/** Deterministic values in [-1, 1) (a linear congruential stream). */
export function values(n: number, seed: number): Float32Array {
  const out = new Float32Array(n);
  let s = seed >>> 0;
  for (let i = 0; i < n; i++) {
    s = (Math.imul(s, 1664525) + 1013904223) >>> 0;
    out[i] = s / 2 ** 31 - 1;
  }
  return out;
}

/** bfloat16 bits of a float32, rounded to nearest even. */
export function bf16Bits(x: number): number {
  const u = new Uint32Array(Float32Array.of(x).buffer)[0]!;
  return ((u + 0x7fff + ((u >>> 16) & 1)) >>> 16) & 0xffff;
}

/** A bfloat16 value as a number: its bits are the top half of a float32. */
export function bf16Value(bits: number): number {
  return new Float32Array(Uint32Array.of(bits << 16).buffer)[0]!;
}

/** float16 bits of values that are exact in float16 (k / 1024 with |k| < 1024): sign, exponent, mantissa. */
export function f16Bits(x: number): number {
  if (x === 0) return 0;
  const a = Math.abs(x);
  const e = Math.floor(Math.log2(a));
  return (x < 0 ? 0x8000 : 0) | ((e + 15) << 10) | Math.round((a / 2 ** e - 1) * 1024);
}

/** A float16 value as a number. */
export function f16Value(bits: number): number {
  const e = (bits >> 10) & 0x1f;
  const m = bits & 0x3ff;
  const v = e === 0 ? m * 2 ** -24 : (1 + m / 1024) * 2 ** (e - 15);
  return bits & 0x8000 ? -v : v;
}
