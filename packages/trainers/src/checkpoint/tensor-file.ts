import { readFileSync } from 'node:fs';
import { TrainersError } from '../errors.js';

/** Float32 arrays by name with their shapes. */
export type NamedArrays = Record<string, { shape: number[]; data: Float32Array }>;

/**
 * Encodes float32 arrays in the safetensors layout (https://huggingface.co/docs/safetensors):
 * u64 little-endian header length, JSON header {name: {dtype, shape, data_offsets}}, raw data.
 * Used for optimizer moments, which can be as large as the model.
 */
export function encodeTensorFile(arrays: NamedArrays, metadata: Record<string, string> = {}): Uint8Array {
  const header: Record<string, unknown> = { __metadata__: metadata };
  let offset = 0;
  for (const [name, a] of Object.entries(arrays)) {
    header[name] = { dtype: 'F32', shape: a.shape, data_offsets: [offset, offset + a.data.byteLength] };
    offset += a.data.byteLength;
  }
  let json = JSON.stringify(header);
  json += ' '.repeat((8 - (json.length % 8)) % 8);
  const head = new TextEncoder().encode(json);
  const out = new Uint8Array(8 + head.length + offset);
  new DataView(out.buffer).setBigUint64(0, BigInt(head.length), true);
  out.set(head, 8);
  let at = 8 + head.length;
  for (const a of Object.values(arrays)) {
    out.set(new Uint8Array(a.data.buffer, a.data.byteOffset, a.data.byteLength), at);
    at += a.data.byteLength;
  }
  return out;
}

/** Reads a file written by `encodeTensorFile`. */
export function readTensorFile(path: string): { arrays: NamedArrays; metadata: Record<string, string> } {
  const buf = readFileSync(path);
  const bad = (why: string) => new TrainersError('CHECKPOINT', `${path}: ${why}; the checkpoint is damaged, resume from another one`);
  if (buf.length < 8) throw bad('too short');
  const len = Number(buf.readBigUInt64LE(0));
  if (8 + len > buf.length) throw bad('header runs past the end');
  const header = JSON.parse(buf.subarray(8, 8 + len).toString('utf8')) as Record<string, { shape: number[]; data_offsets: [number, number] }>;
  const arrays: NamedArrays = {};
  let metadata: Record<string, string> = {};
  for (const [name, entry] of Object.entries(header)) {
    if (name === '__metadata__') {
      metadata = entry as unknown as Record<string, string>;
      continue;
    }
    const [a, b] = entry.data_offsets;
    const bytes = buf.subarray(8 + len + a, 8 + len + b);
    if (bytes.length !== b - a) throw bad(`tensor ${name} is truncated`);
    arrays[name] = { shape: entry.shape, data: new Float32Array(bytes.buffer.slice(bytes.byteOffset, bytes.byteOffset + bytes.length)) };
  }
  return { arrays, metadata };
}
