import { DataError } from '../errors.js';

/**
 * The one seeded PRNG of rl2: xoshiro128** (Blackman & Vigna, https://prng.di.unimi.it/),
 * seeded through splitmix32 so nearby seeds give unrelated streams. Its whole state is four
 * uint32 words, so a checkpoint stores `state()` and `SeededRng.fromState` continues the exact
 * stream. The same seed gives the same stream on every machine. Used by the train/test split,
 * the trainers' data and prompt order, random initialisation and token sampling.
 */
export class SeededRng {
  private readonly s: Uint32Array;

  /** A generator seeded from a 32-bit integer (taken modulo 2^32). */
  constructor(seed: number) {
    let x = seed >>> 0;
    const splitmix32 = () => {
      x = (x + 0x9e3779b9) >>> 0;
      let z = x;
      z = Math.imul(z ^ (z >>> 16), 0x85ebca6b);
      z = Math.imul(z ^ (z >>> 13), 0xc2b2ae35);
      return (z ^ (z >>> 16)) >>> 0;
    };
    this.s = Uint32Array.from([splitmix32(), splitmix32(), splitmix32(), splitmix32()]);
  }

  /**
   * The generator whose state is `state` (four uint32 words, not all zero, as `state()` returns
   * them): continues the stream where it was saved.
   */
  static fromState(state: unknown): SeededRng {
    const ok =
      Array.isArray(state) &&
      state.length === 4 &&
      state.every((w) => Number.isInteger(w) && w >= 0 && w <= 0xffffffff) &&
      state.some((w) => w !== 0);
    if (!ok) {
      throw new DataError(
        'INVALID_ARGUMENT',
        `An RNG state is four uint32 words, not all zero (as SeededRng.state() returns them), ` +
          `got ${JSON.stringify(state)}.`,
      );
    }
    const rng = new SeededRng(0);
    rng.s.set(state);
    return rng;
  }

  /** The full state, to store in a checkpoint and pass back to `SeededRng.fromState`. */
  state(): number[] {
    return Array.from(this.s);
  }

  /** Next uint32. */
  nextUint32(): number {
    const s = this.s;
    const result = Math.imul(rotl(Math.imul(s[1], 5) >>> 0, 7), 9) >>> 0;
    const t = (s[1] << 9) >>> 0;
    s[2] ^= s[0];
    s[3] ^= s[1];
    s[1] ^= s[2];
    s[0] ^= s[3];
    s[2] ^= t;
    s[3] = rotl(s[3], 11);
    return result;
  }

  /** Uniform float in [0, 1) with 32 random bits. */
  next(): number {
    return this.nextUint32() / 2 ** 32;
  }

  /** Standard normal sample (Box-Muller; two draws). */
  normal(): number {
    const u = 1 - this.next();
    return Math.sqrt(-2 * Math.log(u)) * Math.cos(2 * Math.PI * this.next());
  }

  /** A uniformly random permutation of 0..n-1 (Fisher-Yates, one draw per position from the end). */
  permutation(n: number): number[] {
    const p = Array.from({ length: n }, (_, i) => i);
    for (let i = n - 1; i > 0; i--) {
      const j = Math.floor(this.next() * (i + 1));
      [p[i], p[j]] = [p[j] as number, p[i] as number];
    }
    return p;
  }
}

function rotl(v: number, k: number): number {
  return ((v << k) | (v >>> (32 - k))) >>> 0;
}
