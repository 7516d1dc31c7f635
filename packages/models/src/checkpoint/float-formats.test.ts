import { describe, expect, it } from 'vitest';
import { ModelsError } from '../errors.js';
import {
  decodeFloats,
  encodeFloats,
  floatToBf16Bits,
  floatToHalfBits,
  halfToFloat,
  type SafetensorsDtype,
} from './float-formats.js';
import type { HostTensor } from './host-tensor.js';
import { parseSafetensors } from './safetensors-reader.js';
import { serializeSafetensors } from './safetensors-writer.js';

describe('safetensors', () => {
  it('round-trips float32 exactly with an 8-byte aligned header', () => {
    const t = new Map<string, HostTensor>([
      ['b', { shape: [2, 3], data: Float32Array.from([1, -2, 3.5, 1e-20, -0, 7]) }],
      ['a', { shape: [1], data: Float32Array.from([Math.PI]) }],
    ]);
    const bytes = serializeSafetensors(t);
    const n = Number(new DataView(bytes.buffer).getBigUint64(0, true));
    expect(n % 8).toBe(0);
    const header = JSON.parse(new TextDecoder().decode(bytes.subarray(8, 8 + n)));
    // names sorted, offsets contiguous
    expect(header.a.data_offsets).toEqual([0, 4]);
    expect(header.b.data_offsets).toEqual([4, 28]);
    const back = parseSafetensors(bytes);
    expect([...back.get('b')!.data]).toEqual([...t.get('b')!.data]);
    expect(back.get('a')!.data[0]).toBe(Math.fround(Math.PI));
  });

  it('rounds to bfloat16 to nearest even, like torch', () => {
    // 1 + 2^-8 is exactly halfway between bf16 neighbours 1 and 1 + 2^-7: ties go to even (1)
    const f = new Float32Array([1 + 2 ** -8, 1 + 3 * 2 ** -8, -2.5]);
    const u = new Uint32Array(f.buffer);
    expect(floatToBf16Bits(u[0]!)).toBe(0x3f80);
    expect(floatToBf16Bits(u[1]!)).toBe(0x3f82);
    const back = parseSafetensors(
      serializeSafetensors(new Map([['x', { shape: [3], data: f }]]), 'BF16'),
    );
    expect([...back.get('x')!.data]).toEqual([1, 1 + 2 ** -6, -2.5]);
  });

  it('decodes float16 incl. subnormals and infinities', () => {
    expect(halfToFloat(0x3c00)).toBe(1);
    expect(halfToFloat(0xc000)).toBe(-2);
    expect(halfToFloat(0x0001)).toBe(2 ** -24);
    expect(halfToFloat(0x7c00)).toBe(Number.POSITIVE_INFINITY);
    expect(halfToFloat(0x7bff)).toBe(65504);
  });

  it('names the tensor whose offsets are wrong', () => {
    const bytes = serializeSafetensors(new Map([['w', { shape: [2], data: new Float32Array(2) }]]));
    const n = Number(new DataView(bytes.buffer).getBigUint64(0, true));
    const text = new TextDecoder().decode(bytes.subarray(8, 8 + n)).replace('[2]', '[3]');
    const broken = new Uint8Array(bytes);
    broken.set(new TextEncoder().encode(text), 8);
    expect(() => parseSafetensors(broken, 'x.safetensors')).toThrow(
      /x\.safetensors: tensor "w" offsets/,
    );
    expect(() => parseSafetensors(new Uint8Array(4))).toThrow(ModelsError);
  });

  const bits = (x: number) => new Uint32Array(Float32Array.of(x).buffer)[0] as number;

  it('rounds to float16 to nearest even, overflowing to inf and underflowing through subnormals, like torch', () => {
    const cases: [number, number][] = [
      [1, 0x3c00],
      [-2, 0xc000],
      [65504, 0x7bff], // largest finite
      [65519, 0x7bff], // below the halfway point to 65536
      [65520, 0x7c00], // halfway: ties to even = inf
      [1e9, 0x7c00],
      [-Infinity, 0xfc00],
      [-0, 0x8000],
      [2 ** -24, 0x0001], // smallest subnormal
      [2 ** -25, 0x0000], // halfway to 0 and 2^-24: ties to even = 0
      [1.5 * 2 ** -25, 0x0001],
      [3 * 2 ** -25, 0x0002], // 1.5 units: ties to even = 2
      [1023.5 * 2 ** -24, 0x0400], // largest subnormal + half a unit: carries into the smallest normal
      [2 ** -14, 0x0400],
      [1 + 2 ** -11, 0x3c00], // halfway between 1 and 1 + 2^-10: even
      [1 + 3 * 2 ** -11, 0x3c02],
      [2047.75, 0x67ff + 1], // 2047.75 rounds up across the binade to 2048
    ];
    for (const [x, h] of cases) expect(floatToHalfBits(bits(x)), String(x)).toBe(h);
    expect(floatToHalfBits(bits(Number.NaN)) & 0x7fff).toBeGreaterThan(0x7c00);
  });

  it('every float16 value survives float16 -> float32 -> float16', () => {
    for (let h = 0; h < 65536; h++) {
      if ((h & 0x7c00) === 0x7c00 && h & 0x3ff) continue; // NaN payloads are not kept
      const back = floatToHalfBits(bits(halfToFloat(h)));
      if (back !== h) expect(back, `0x${h.toString(16)}`).toBe(h);
    }
  });

  it.each(['F32', 'F16', 'BF16'] as SafetensorsDtype[])(
    'encodeFloats and decodeFloats are inverse on values %s can hold',
    (dtype) => {
      const values = Float32Array.from([0, 1, -2.5, 0.15625, 1024, -3.75, 2 ** -14, 96]);
      const bytes = new Uint8Array(values.length * (dtype === 'F32' ? 4 : 2));
      encodeFloats(values, dtype, bytes);
      const back = new Float32Array(values.length + 2);
      decodeFloats(bytes, dtype, back, 2);
      expect([...back.subarray(2)]).toEqual([...values]);
      expect([...back.subarray(0, 2)]).toEqual([0, 0]);
    },
  );
});
