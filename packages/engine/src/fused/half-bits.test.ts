import { afterEach, beforeAll, describe, expect, it } from 'vitest';
import { initEngine } from '../init-engine.js';
import { nativeForTests } from '../testing/native-for-tests.js';
import { decodeKernels } from './fused-decode.js';

// The native 16-bit copies (native/half-bits.c, `DecodeKernels.halfBits`) against bits worked
// out by hand: round to nearest even at ties, overflow to infinity, float16 subnormals, NaN;
// the float16 cases through F16C and through the plain loop (RL2_DECODE_ISA=c), in an array
// long enough to be split over the threads.
const hasNative = nativeForTests().ok;

/** [float32 bits, bfloat16 bits] */
const BF16: [number, number][] = [
  [0x3f800000, 0x3f80], // 1
  [0x3f808000, 0x3f80], // 1 + 2^-8: a tie, to the even 0x3f80
  [0x3f818000, 0x3f82], // a tie above the odd 0x3f81: up to the even 0x3f82
  [0x3f808001, 0x3f81], // just above the tie: up
  [0xc0000000, 0xc000], // -2
  [0x7f7fffff, 0x7f80], // the largest float32 rounds up to infinity
  [0x7f800000, 0x7f80], // infinity
  [0xff800000, 0xff80], // -infinity
  [0x7fc00001, 0x7fc0], // a NaN: the quiet NaN
  [0xffa00000, 0x7fc0], // a signalling negative NaN: the quiet NaN
  [0x00000001, 0x0000], // the smallest subnormal: zero
  [0x80000000, 0x8000], // -0
];

/** [float32 value, float16 bits] */
const F16: [number, number][] = [
  [1, 0x3c00],
  [-2, 0xc000],
  [65504, 0x7bff], // the largest float16
  [65519, 0x7bff], // below the halfway point to 65536: down
  [65520, 0x7c00], // the halfway point: to infinity (even)
  [2 ** -14, 0x0400], // the smallest normal
  [2 ** -24, 0x0001], // the smallest subnormal
  [2 ** -25, 0x0000], // half of it: a tie, to the even zero
  [1.5 * 2 ** -25, 0x0001], // above the tie: up
  [3 * 2 ** -25, 0x0002], // 1.5 units: a tie, to the even 2
  [1 + 2 ** -11, 0x3c00], // a tie at 1: to the even 0x3c00
  [1 + 3 * 2 ** -11, 0x3c02], // a tie above the odd 0x3c01: up
  [-0, 0x8000],
  [Number.POSITIVE_INFINITY, 0x7c00],
  [Number.NEGATIVE_INFINITY, 0xfc00],
  [Number.NaN, 0x7e00],
  [1e-30, 0x0000], // far below the subnormals
];

/** The case of element i: the cases cycled with a stride of 7 (NaNs among finite values, groups of 8 cut anywhere). */
const at = (i: number, cases: number) => (i * 7) % cases;

/** 'all equal', or the first element where `y` is not `want`. */
function firstMismatch(x: Float32Array, y: Uint16Array, want: (i: number) => number): string {
  for (let i = 0; i < y.length; i++)
    if (y[i] !== want(i)) return `element ${i}: ${y[i]} for ${x[i]}, want ${want(i)}`;
  return 'all equal';
}

const N = 200_003;

describe.skipIf(!hasNative)('halfBits', () => {
  beforeAll(async () => {
    await initEngine({ backend: 'native', threads: 2, logger: () => {}, env: {} });
  });
  afterEach(() => {
    delete process.env.RL2_DECODE_ISA;
  });

  it('rounds float32 to bfloat16 bits to nearest even, NaN to the quiet NaN', () => {
    const bits = Uint32Array.from({ length: N }, (_, i) => BF16[at(i, BF16.length)]![0]);
    const x = new Float32Array(bits.buffer);
    const y = new Uint16Array(N);
    decodeKernels()!.halfBits(x, 'bfloat16', y);
    expect(firstMismatch(x, y, (i) => BF16[at(i, BF16.length)]![1])).toBe('all equal');
  });

  for (const isa of ['f16c', 'c']) {
    it(`rounds float32 to float16 bits to nearest even, subnormals and overflow included (${isa})`, () => {
      if (isa === 'c') process.env.RL2_DECODE_ISA = 'c';
      const x = Float32Array.from({ length: N }, (_, i) => F16[at(i, F16.length)]![0]);
      const y = new Uint16Array(N);
      decodeKernels()!.halfBits(x, 'float16', y);
      expect(firstMismatch(x, y, (i) => F16[at(i, F16.length)]![1])).toBe('all equal');
    });
  }

  it('refuses a y shorter than x, naming the kernel', () => {
    expect(() =>
      decodeKernels()!.halfBits(new Float32Array(4), 'bfloat16', new Uint16Array(3)),
    ).toThrow('halfBits: y is shorter than x');
  });
});
