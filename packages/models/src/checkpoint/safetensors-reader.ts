import { type ByteSource, byteBuffer, openByteFile } from './byte-file.js';
import { assertLittleEndian, DTYPE_BYTES, decodeFloats } from './float-formats.js';
import type { HostTensor } from './host-tensor.js';
import {
  checkpointError,
  elementCount,
  headerLength,
  parseHeader,
  type SafetensorsHeader,
  type TensorEntry,
} from './safetensors-header.js';

/** Bytes converted per step when widening F16/BF16 (the only scratch memory a read needs). */
const CHUNK_BYTES = 8 << 20;

/**
 * A safetensors file read tensor by tensor with positioned reads, so files of any size (over
 * 2 or 4 GiB included) load with no buffer beyond the float32 result: F32 is read straight
 * into it, F16/BF16 through an 8 MiB scratch buffer. https://github.com/huggingface/safetensors#format
 */
export class SafetensorsReader {
  private constructor(
    private readonly source: ByteSource,
    readonly header: SafetensorsHeader,
  ) {}

  /** Opens `path` and parses its header (the data is read by `read`). Close it when done. */
  static open(path: string): SafetensorsReader {
    return SafetensorsReader.over(openByteFile(path));
  }

  /** A reader over bytes already in memory; `path` names them in errors. */
  static fromBytes(bytes: Uint8Array, path = 'model.safetensors'): SafetensorsReader {
    return SafetensorsReader.over(byteBuffer(bytes, path));
  }

  private static over(source: ByteSource): SafetensorsReader {
    try {
      assertLittleEndian();
      const first8 = new Uint8Array(Math.min(8, source.size));
      source.readInto(first8, 0);
      const n = headerLength(first8, source.size, source.path);
      const json = new Uint8Array(n);
      source.readInto(json, 8);
      return new SafetensorsReader(source, parseHeader(json, source.size, source.path));
    } catch (e) {
      source.close();
      throw e;
    }
  }

  get path(): string {
    return this.source.path;
  }

  /** Tensor names in the file. */
  names(): string[] {
    return [...this.header.entries.keys()];
  }

  /** Where `name` lies, or undefined. */
  entry(name: string): TensorEntry | undefined {
    return this.header.entries.get(name);
  }

  /** Reads tensor `name` widened to float32. */
  read(name: string): HostTensor {
    const e = this.header.entries.get(name);
    if (!e) throw checkpointError(this.path, `has no tensor "${name}"`);
    const data = new Float32Array(elementCount(e.shape));
    this.readInto(e, data);
    return { shape: [...e.shape], data };
  }

  /** Reads a BF16/F16 tensor `name` as its 16-bit bits (no widening). */
  readBits(name: string): Uint16Array {
    const e = this.header.entries.get(name);
    if (!e || e.dtype === 'F32')
      throw checkpointError(
        this.path,
        `has no 16-bit tensor "${name}" (${e ? e.dtype : 'absent'})`,
      );
    const bits = new Uint16Array(elementCount(e.shape));
    this.source.readInto(new Uint8Array(bits.buffer, 0, e.byteLength), e.start);
    return bits;
  }

  /** Reads `entry` into `dst` (its element count long). */
  readInto(entry: TensorEntry, dst: Float32Array): void {
    if (entry.dtype === 'F32') {
      this.source.readInto(
        new Uint8Array(dst.buffer, dst.byteOffset, entry.byteLength),
        entry.start,
      );
      return;
    }
    const size = DTYPE_BYTES[entry.dtype];
    const scratch = new Uint8Array(Math.min(CHUNK_BYTES, entry.byteLength));
    for (let done = 0; done < entry.byteLength; done += scratch.byteLength) {
      const chunk = scratch.subarray(0, Math.min(scratch.byteLength, entry.byteLength - done));
      this.source.readInto(chunk, entry.start + done);
      decodeFloats(chunk, entry.dtype, dst, done / size);
    }
  }

  close(): void {
    this.source.close();
  }
}

/**
 * Parses safetensors bytes already in memory into float32 tensors (F32/F16/BF16). For files,
 * `SafetensorsReader.open` reads one tensor at a time without holding the file.
 */
export function parseSafetensors(
  bytes: Uint8Array,
  source = 'model.safetensors',
): Map<string, HostTensor> {
  const reader = SafetensorsReader.fromBytes(bytes, source);
  return new Map(reader.names().map((name) => [name, reader.read(name)]));
}
