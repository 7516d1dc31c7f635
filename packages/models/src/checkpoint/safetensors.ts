import { ModelsError } from '../errors.js';

/** Element types read from safetensors; everything is widened to float32 on load. */
export type SafetensorsDtype = 'F32' | 'F16' | 'BF16';
/** Element types written: float32 or bfloat16 (round to nearest even). */
export type SaveDtype = 'F32' | 'BF16';

/** A host tensor: row-major float32 values and their shape. */
export interface HostTensor {
  shape: number[];
  data: Float32Array;
}

const BYTES: Record<SafetensorsDtype, number> = { F32: 4, F16: 2, BF16: 2 };

/**
 * Parses a safetensors file: u64 little-endian header length N, N bytes of JSON
 * `{name: {dtype, shape, data_offsets: [begin, end]}, __metadata__?}`, then the raw data
 * (https://github.com/huggingface/safetensors#format). F32/F16/BF16 become float32.
 */
export function parseSafetensors(bytes: Uint8Array, source = 'model.safetensors'): Map<string, HostTensor> {
  const fail = (why: string) => new ModelsError('CHECKPOINT_ERROR', `${source}: ${why}`);
  if (bytes.byteLength < 8) throw fail('file is shorter than the 8-byte header length');
  const view = new DataView(bytes.buffer, bytes.byteOffset, bytes.byteLength);
  const n = Number(view.getBigUint64(0, true));
  if (8 + n > bytes.byteLength) throw fail(`header length ${n} runs past the end of the file (${bytes.byteLength} bytes)`);
  let header: Record<string, { dtype: string; shape: number[]; data_offsets: [number, number] }>;
  try {
    header = JSON.parse(new TextDecoder().decode(bytes.subarray(8, 8 + n)));
  } catch (e) {
    throw fail(`header is not valid JSON (${(e as Error).message})`);
  }
  const body = 8 + n;
  const out = new Map<string, HostTensor>();
  for (const [name, info] of Object.entries(header)) {
    if (name === '__metadata__') continue;
    const dtype = info.dtype as SafetensorsDtype;
    if (!(dtype in BYTES)) throw fail(`tensor "${name}" has dtype ${info.dtype}; only F32, F16 and BF16 are supported`);
    const count = info.shape.reduce((a, b) => a * b, 1);
    const [begin, end] = info.data_offsets;
    if (end - begin !== count * BYTES[dtype] || body + end > bytes.byteLength) {
      throw fail(`tensor "${name}" offsets [${begin}, ${end}] do not fit shape [${info.shape}] ${dtype}`);
    }
    out.set(name, { shape: [...info.shape], data: decode(bytes, body + begin, count, dtype) });
  }
  return out;
}

function decode(bytes: Uint8Array, offset: number, count: number, dtype: SafetensorsDtype): Float32Array {
  const out = new Float32Array(count);
  const view = new DataView(bytes.buffer, bytes.byteOffset + offset, count * BYTES[dtype]);
  if (dtype === 'F32') {
    for (let i = 0; i < count; i++) out[i] = view.getFloat32(i * 4, true);
  } else if (dtype === 'BF16') {
    // bfloat16 is the top half of a float32
    const u32 = new Uint32Array(out.buffer);
    for (let i = 0; i < count; i++) u32[i] = view.getUint16(i * 2, true) << 16;
  } else {
    for (let i = 0; i < count; i++) out[i] = halfToFloat(view.getUint16(i * 2, true));
  }
  return out;
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
 * Serialises tensors to safetensors bytes, names sorted (as the Python writer does), header
 * padded with spaces to 8 bytes. `metadata` goes to `__metadata__` (default `{format: "pt"}`).
 */
export function serializeSafetensors(
  tensors: Map<string, HostTensor>,
  dtype: SaveDtype = 'F32',
  metadata: Record<string, string> = { format: 'pt' },
): Uint8Array {
  const names = [...tensors.keys()].sort();
  const size = BYTES[dtype];
  const header: Record<string, unknown> = {};
  let offset = 0;
  for (const name of names) {
    const t = tensors.get(name)!;
    const count = t.shape.reduce((a, b) => a * b, 1);
    if (count !== t.data.length) {
      throw new ModelsError('SHAPE_MISMATCH', `tensor "${name}": shape [${t.shape}] needs ${count} values, has ${t.data.length}`);
    }
    header[name] = { dtype, shape: t.shape, data_offsets: [offset, offset + count * size] };
    offset += count * size;
  }
  header.__metadata__ = metadata;
  let json = JSON.stringify(header);
  json += ' '.repeat((8 - (new TextEncoder().encode(json).length % 8)) % 8);
  const head = new TextEncoder().encode(json);
  const out = new Uint8Array(8 + head.length + offset);
  const view = new DataView(out.buffer);
  view.setBigUint64(0, BigInt(head.length), true);
  out.set(head, 8);
  let p = 8 + head.length;
  for (const name of names) {
    const data = tensors.get(name)!.data;
    if (dtype === 'F32') {
      for (let i = 0; i < data.length; i++, p += 4) view.setFloat32(p, data[i]!, true);
    } else {
      const u32 = new Uint32Array(data.buffer, data.byteOffset, data.length);
      for (let i = 0; i < data.length; i++, p += 2) view.setUint16(p, floatToBf16Bits(u32[i]!), true);
    }
  }
  return out;
}
