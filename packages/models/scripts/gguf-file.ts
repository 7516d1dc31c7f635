// GGUF v3 encoding and decoding of the header (metadata and tensor infos), as llama.cpp's
// gguf-py writes it: https://github.com/ggml-org/ggml/blob/master/docs/gguf.md. Little-endian;
// tensor data starts at the next multiple of `general.alignment` (32) after the header, and each
// tensor's offset (relative to that start) is a multiple of it too.
import { closeSync, openSync, readSync } from 'node:fs';

export const GGUF_MAGIC = 0x46554747; // "GGUF"
export const GGUF_ALIGNMENT = 32;

/** gguf-py GGUFValueType. */
export const ValueType = {
  UINT32: 4,
  INT32: 5,
  FLOAT32: 6,
  BOOL: 7,
  STRING: 8,
  ARRAY: 9,
  UINT64: 10,
} as const;
type ScalarType = Exclude<(typeof ValueType)[keyof typeof ValueType], 9>;

/** gguf-py GGMLQuantizationType, the two this writer emits. */
export const GgmlType = { F32: 0, BF16: 30 } as const;
export type GgmlTypeId = (typeof GgmlType)[keyof typeof GgmlType];

export type MetaValue =
  | { type: ScalarType; value: number | bigint | string | boolean }
  | { type: 9; itemType: ScalarType; value: (number | string)[] };

export interface TensorInfo {
  name: string;
  /** GGUF order: dims[0] is the fastest-moving (HF shape reversed). */
  dims: number[];
  type: GgmlTypeId;
  /** Byte offset from the start of the data section. */
  offset: number;
}

export interface GgufHeader {
  version: number;
  metadata: Map<string, MetaValue>;
  tensors: TensorInfo[];
  /** Absolute byte offset of the data section. */
  dataStart: number;
}

export const meta = {
  u32: (value: number): MetaValue => ({ type: ValueType.UINT32, value }),
  f32: (value: number): MetaValue => ({ type: ValueType.FLOAT32, value }),
  str: (value: string): MetaValue => ({ type: ValueType.STRING, value }),
  bool: (value: boolean): MetaValue => ({ type: ValueType.BOOL, value }),
  strings: (value: string[]): MetaValue => ({ type: 9, itemType: ValueType.STRING, value }),
  i32s: (value: number[]): MetaValue => ({ type: 9, itemType: ValueType.INT32, value }),
};

export const bytesPerElement = (t: GgmlTypeId) => (t === GgmlType.F32 ? 4 : 2);
export const alignUp = (n: number) => Math.ceil(n / GGUF_ALIGNMENT) * GGUF_ALIGNMENT;

/** A growable little-endian byte buffer. */
class ByteWriter {
  private buf = Buffer.alloc(1 << 16);
  length = 0;
  private room(n: number) {
    if (this.length + n <= this.buf.length) return;
    const next = Buffer.alloc(Math.max(this.buf.length * 2, this.length + n));
    this.buf.copy(next, 0, 0, this.length);
    this.buf = next;
  }
  u32(v: number) {
    this.room(4);
    this.length = this.buf.writeUInt32LE(v, this.length);
  }
  i32(v: number) {
    this.room(4);
    this.length = this.buf.writeInt32LE(v, this.length);
  }
  u64(v: number | bigint) {
    this.room(8);
    this.length = this.buf.writeBigUInt64LE(BigInt(v), this.length);
  }
  f32(v: number) {
    this.room(4);
    this.length = this.buf.writeFloatLE(v, this.length);
  }
  u8(v: number) {
    this.room(1);
    this.length = this.buf.writeUInt8(v, this.length);
  }
  str(s: string) {
    const b = Buffer.from(s, 'utf8');
    this.u64(b.length);
    this.room(b.length);
    this.length += b.copy(this.buf, this.length);
  }
  bytes(): Buffer {
    return this.buf.subarray(0, this.length);
  }
}

function writeScalar(w: ByteWriter, type: ScalarType, v: number | bigint | string | boolean) {
  if (type === ValueType.UINT32) w.u32(v as number);
  else if (type === ValueType.INT32) w.i32(v as number);
  else if (type === ValueType.FLOAT32) w.f32(v as number);
  else if (type === ValueType.BOOL) w.u8(v ? 1 : 0);
  else if (type === ValueType.STRING) w.str(v as string);
  else w.u64(v as number | bigint);
}

/** The header bytes, padded to the alignment: the data section follows at `.length`. */
export function encodeHeader(metadata: Map<string, MetaValue>, tensors: TensorInfo[]): Buffer {
  const w = new ByteWriter();
  w.u32(GGUF_MAGIC);
  w.u32(3);
  w.u64(tensors.length);
  w.u64(metadata.size);
  for (const [key, v] of metadata) {
    w.str(key);
    w.u32(v.type);
    if (v.type === 9) {
      w.u32(v.itemType);
      w.u64(v.value.length);
      for (const item of v.value) writeScalar(w, v.itemType, item);
    } else writeScalar(w, v.type, v.value);
  }
  for (const t of tensors) {
    w.str(t.name);
    w.u32(t.dims.length);
    for (const d of t.dims) w.u64(d);
    w.u32(t.type);
    w.u64(t.offset);
  }
  while (w.length % GGUF_ALIGNMENT) w.u8(0);
  return w.bytes();
}

/** Reads the header of the GGUF file at `path` (reads only the header's bytes). */
export function readGgufHeader(path: string): GgufHeader {
  const fd = openSync(path, 'r');
  try {
    let buf = Buffer.alloc(1 << 20);
    let have = readSync(fd, buf, 0, buf.length, 0);
    let at = 0;
    const need = (n: number) => {
      while (at + n > have) {
        const next = Buffer.alloc(buf.length * 2);
        buf.copy(next, 0, 0, have);
        buf = next;
        const got = readSync(fd, buf, have, buf.length - have, have);
        if (got === 0) throw new Error(`${path}: GGUF header cut off at byte ${have}`);
        have += got;
      }
    };
    const take = (n: number) => {
      need(n);
      at += n;
      return at - n;
    };
    // `take` may grow (replace) buf: read buf only after it returns
    const u32 = () => {
      const p = take(4);
      return buf.readUInt32LE(p);
    };
    const u64 = () => {
      const p = take(8);
      return Number(buf.readBigUInt64LE(p));
    };
    const str = () => {
      const n = u64();
      const from = take(n);
      return buf.toString('utf8', from, from + n);
    };
    const scalar = (type: number): number | string | boolean => {
      if (type === ValueType.UINT32) return u32();
      if (type === ValueType.BOOL) {
        const p = take(1);
        return buf[p] !== 0;
      }
      if (type === ValueType.INT32 || type === ValueType.FLOAT32) {
        const p = take(4);
        return type === ValueType.INT32 ? buf.readInt32LE(p) : buf.readFloatLE(p);
      }
      if (type === ValueType.STRING) return str();
      if (type === ValueType.UINT64) return u64();
      throw new Error(`${path}: GGUF value type ${type} is not one this reader knows`);
    };
    if (u32() !== GGUF_MAGIC) throw new Error(`${path}: not a GGUF file (no "GGUF" magic)`);
    const version = u32();
    const nTensors = u64();
    const nMeta = u64();
    const metadata = new Map<string, MetaValue>();
    for (let i = 0; i < nMeta; i++) {
      const key = str();
      const type = u32();
      if (type === 9) {
        const itemType = u32() as ScalarType;
        const n = u64();
        const value = Array.from({ length: n }, () => scalar(itemType) as number | string);
        metadata.set(key, { type: 9, itemType, value });
      } else metadata.set(key, { type: type as ScalarType, value: scalar(type) });
    }
    const tensors: TensorInfo[] = [];
    for (let i = 0; i < nTensors; i++) {
      const name = str();
      const dims = Array.from({ length: u32() }, () => u64());
      tensors.push({ name, dims, type: u32() as GgmlTypeId, offset: u64() });
    }
    return { version, metadata, tensors, dataStart: alignUp(at) };
  } finally {
    closeSync(fd);
  }
}
