import { endianness } from 'node:os';
import { ModelsError } from '../errors.js';

/** Element types read from and written to safetensors; everything is float32 in memory. */
export type SafetensorsDtype = 'F32' | 'F16' | 'BF16';

/** Bytes per element of each safetensors dtype. */
export const DTYPE_BYTES: Readonly<Record<SafetensorsDtype, number>> = { F32: 4, F16: 2, BF16: 2 };

/** Names a config.json `torch_dtype` (and `save_dtype`) uses for each safetensors dtype. */
export const TORCH_DTYPES = { float32: 'F32', bfloat16: 'BF16', float16: 'F16' } as const;
export type TorchDtype = keyof typeof TORCH_DTYPES;

/** The safetensors dtype of a torch dtype name, or an error naming `key` and the choices. */
export function safetensorsDtypeOf(torchDtype: string, key = 'dtype'): SafetensorsDtype {
  const dtype = TORCH_DTYPES[torchDtype as TorchDtype];
  if (!dtype)
    throw new ModelsError(
      'INVALID_ARGUMENT',
      `${key} "${torchDtype}" is not a save dtype; use one of ${Object.keys(TORCH_DTYPES).join(', ')}`,
    );
  return dtype;
}

/**
 * Safetensors data is little-endian and typed arrays use the host order, so the fast paths
 * here (a Float32Array read straight from the file) need a little-endian host (x86, Arm).
 */
export function assertLittleEndian(): void {
  if (endianness() !== 'LE')
    throw new ModelsError(
      'UNSUPPORTED_CONFIG',
      '@rl2/models reads and writes safetensors on little-endian machines only',
    );
}

/** IEEE 754 binary16 bits to a number (subnormals, inf and NaN included). */
export function halfToFloat(h: number): number {
  const sign = h & 0x8000 ? -1 : 1;
  const exp = (h >> 10) & 0x1f;
  const frac = h & 0x3ff;
  if (exp === 0) return sign * frac * 2 ** -24;
  if (exp === 31) return frac ? Number.NaN : sign * Number.POSITIVE_INFINITY;
  return sign * (1 + frac / 1024) * 2 ** (exp - 15);
}

/** float32 bits to bfloat16 bits, rounding to nearest even (as torch's `.to(torch.bfloat16)`). */
export function floatToBf16Bits(u32: number): number {
  if ((u32 & 0x7f800000) === 0x7f800000 && u32 & 0x7fffff) return 0x7fc0; // NaN
  return ((u32 + 0x7fff + ((u32 >>> 16) & 1)) >>> 16) & 0xffff;
}

/**
 * float32 bits to binary16 bits, rounding to nearest even as torch's `.to(torch.float16)`:
 * magnitudes from 65520 up become infinity, below 2^-25 zero, in between subnormals.
 */
export function floatToHalfBits(u32: number): number {
  const sign = (u32 >>> 16) & 0x8000;
  const exp = (u32 >>> 23) & 0xff;
  const mant = u32 & 0x7fffff;
  if (exp === 0xff) return sign | 0x7c00 | (mant ? 0x200 : 0);
  const e = exp - 112; // the binary16 exponent field
  if (e >= 31) return sign | 0x7c00;
  if (e <= 0) {
    if (e < -10) return sign;
    const full = mant | 0x800000;
    const shift = 14 - e; // float32 value = full * 2^(exp-150), binary16 subnormal unit = 2^-24
    const rest = full & ((1 << shift) - 1);
    const half = 1 << (shift - 1);
    const m = full >>> shift;
    return sign | (m + (rest > half || (rest === half && m & 1) ? 1 : 0));
  }
  const h = sign | (e << 10) | (mant >>> 13);
  const rest = mant & 0x1fff;
  return h + (rest > 0x1000 || (rest === 0x1000 && h & 1) ? 1 : 0); // a carry rounds up to the next exponent or inf
}

let halfTable: Float32Array | undefined;
/** All 65536 binary16 values as float32 (256 KiB), for decoding without per-element maths. */
function halfValues(): Float32Array {
  if (!halfTable) {
    halfTable = new Float32Array(65536);
    for (let h = 0; h < 65536; h++) halfTable[h] = halfToFloat(h);
  }
  return halfTable;
}

/**
 * Decodes `src` (whole elements of `dtype`, little-endian, 2-byte aligned) into `dst` from
 * element `at`. F32 is copied; BF16 is the top half of a float32; F16 goes through a table.
 */
export function decodeFloats(
  src: Uint8Array,
  dtype: SafetensorsDtype,
  dst: Float32Array,
  at: number,
): void {
  if (dtype === 'F32') {
    new Uint8Array(dst.buffer, dst.byteOffset + at * 4, src.byteLength).set(src);
    return;
  }
  const bits = new Uint16Array(src.buffer, src.byteOffset, src.byteLength / 2);
  if (dtype === 'BF16') {
    const out = new Uint32Array(dst.buffer, dst.byteOffset + at * 4, bits.length);
    for (let i = 0; i < bits.length; i++) out[i] = (bits[i] as number) << 16;
    return;
  }
  const table = halfValues();
  for (let i = 0; i < bits.length; i++) dst[at + i] = table[bits[i] as number] as number;
}

/**
 * Encodes `src` as `dtype` into `out` (little-endian; `out` 2-byte aligned and
 * `src.length * DTYPE_BYTES[dtype]` bytes long), rounding to nearest even.
 */
export function encodeFloats(src: Float32Array, dtype: SafetensorsDtype, out: Uint8Array): void {
  if (dtype === 'F32') {
    out.set(new Uint8Array(src.buffer, src.byteOffset, src.byteLength));
    return;
  }
  const u32 = new Uint32Array(src.buffer, src.byteOffset, src.length);
  const bits = new Uint16Array(out.buffer, out.byteOffset, src.length);
  const round = dtype === 'BF16' ? floatToBf16Bits : floatToHalfBits;
  for (let i = 0; i < u32.length; i++) bits[i] = round(u32[i] as number);
}
