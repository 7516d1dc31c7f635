import { describe, expect, it } from 'vitest';
import { ModelsError } from '../errors.js';
import { floatToBf16Bits, halfToFloat, type HostTensor, parseSafetensors, serializeSafetensors } from './safetensors.js';

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
    const back = parseSafetensors(serializeSafetensors(new Map([['x', { shape: [3], data: f }]]), 'BF16'));
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
    expect(() => parseSafetensors(broken, 'x.safetensors')).toThrow(/x\.safetensors: tensor "w" offsets/);
    expect(() => parseSafetensors(new Uint8Array(4))).toThrow(ModelsError);
  });
});
