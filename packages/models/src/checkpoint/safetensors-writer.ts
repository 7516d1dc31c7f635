import { closeSync, fsyncSync, openSync } from 'node:fs';
import { ModelsError } from '../errors.js';
import { writeAt } from './byte-file.js';
import {
  assertLittleEndian,
  DTYPE_BYTES,
  encodeFloats,
  type SafetensorsDtype,
} from './float-formats.js';
import type { HostTensor } from './host-tensor.js';
import {
  buildHeader,
  checkpointError,
  elementCount,
  type SafetensorsHeader,
  type TensorSpec,
} from './safetensors-header.js';

/** Elements converted per write when narrowing to F16/BF16. */
const CHUNK_ELEMENTS = 4 << 20;

/** `__metadata__` of the files written here, as `save_pretrained` writes it. */
export const PT_METADATA: Readonly<Record<string, string>> = { format: 'pt' };

/**
 * A safetensors file written tensor by tensor with positioned writes: the header (names,
 * shapes, offsets) is fixed when the file is opened, then each tensor goes to its place in any
 * order, converted from float32 to `dtype` in 16 MiB pieces. No buffer holds the file.
 */
export class SafetensorsWriter {
  private readonly pending: Set<string>;

  private constructor(
    readonly path: string,
    private fd: number | undefined,
    readonly header: SafetensorsHeader,
  ) {
    this.pending = new Set(header.entries.keys());
  }

  /** Creates `path` (replacing a file there) with room for `specs` as `dtype`. */
  static create(
    path: string,
    specs: readonly TensorSpec[],
    dtype: SafetensorsDtype,
    metadata: Record<string, string> = { ...PT_METADATA },
  ): SafetensorsWriter {
    assertLittleEndian();
    const { bytes, header } = buildHeader(specs, dtype, metadata);
    const fd = openSync(path, 'w');
    try {
      writeAt(fd, bytes, 0);
    } catch (e) {
      closeSync(fd);
      throw e;
    }
    return new SafetensorsWriter(path, fd, header);
  }

  /** Writes tensor `name` (float32 values, converted to the file's dtype). */
  write(name: string, data: Float32Array): void {
    const e = this.header.entries.get(name);
    if (!e)
      throw new ModelsError(
        'INVALID_ARGUMENT',
        `${this.path}: no tensor "${name}" was planned in this file`,
      );
    if (data.length !== elementCount(e.shape)) {
      throw new ModelsError(
        'SHAPE_MISMATCH',
        `tensor "${name}": shape [${e.shape}] needs ${elementCount(e.shape)} values, has ${data.length}`,
      );
    }
    const fd = this.openFd();
    if (e.dtype === 'F32') {
      writeAt(fd, new Uint8Array(data.buffer, data.byteOffset, data.byteLength), e.start);
    } else {
      const size = DTYPE_BYTES[e.dtype];
      const scratch = new Uint8Array(Math.min(CHUNK_ELEMENTS, data.length) * size);
      for (let i = 0; i < data.length; i += CHUNK_ELEMENTS) {
        const part = data.subarray(i, Math.min(data.length, i + CHUNK_ELEMENTS));
        const out = scratch.subarray(0, part.length * size);
        encodeFloats(part, e.dtype, out);
        writeAt(fd, out, e.start + i * size);
      }
    }
    this.pending.delete(name);
  }

  /** Flushes the file to disk and closes it; every planned tensor must have been written. */
  close(): void {
    const fd = this.openFd();
    if (this.pending.size > 0) {
      this.abort();
      throw checkpointError(
        this.path,
        `${this.pending.size} planned tensor(s) were never written (${[...this.pending].slice(0, 3).join(', ')})`,
      );
    }
    fsyncSync(fd);
    closeSync(fd);
    this.fd = undefined;
  }

  /** Closes the file without checks (it is incomplete: the caller removes it). */
  abort(): void {
    if (this.fd !== undefined) closeSync(this.fd);
    this.fd = undefined;
  }

  private openFd(): number {
    if (this.fd === undefined)
      throw new ModelsError('INVALID_ARGUMENT', `${this.path} is already closed`);
    return this.fd;
  }
}

/**
 * Serialises small tensors to safetensors bytes in memory (names sorted, header padded to 8
 * bytes). Checkpoints go through `SafetensorsWriter`/`saveModel`, which never hold a file.
 */
export function serializeSafetensors(
  tensors: ReadonlyMap<string, HostTensor>,
  dtype: SafetensorsDtype = 'F32',
  metadata: Record<string, string> = { ...PT_METADATA },
): Uint8Array {
  const specs = [...tensors].map(([name, t]) => ({ name, shape: t.shape }));
  const { bytes, header } = buildHeader(specs, dtype, metadata);
  const out = new Uint8Array(header.fileSize);
  out.set(bytes);
  for (const [name, e] of header.entries) {
    const data = (tensors.get(name) as HostTensor).data;
    if (data.length !== elementCount(e.shape)) {
      throw new ModelsError(
        'SHAPE_MISMATCH',
        `tensor "${name}": shape [${e.shape}] needs ${elementCount(e.shape)} values, has ${data.length}`,
      );
    }
    encodeFloats(data, dtype, out.subarray(e.start, e.start + e.byteLength));
  }
  return out;
}
