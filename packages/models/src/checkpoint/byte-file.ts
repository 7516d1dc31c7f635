import { closeSync, fstatSync, openSync, readSync, writeSync } from 'node:fs';
import { checkpointError } from './safetensors-header.js';

/** Largest span one read/write call moves (node's limit is 2 GiB - 1). */
const MAX_IO_BYTES = 1 << 30;

/** Bytes readable at any position: a file (positioned reads) or a buffer. */
export interface ByteSource {
  readonly path: string;
  readonly size: number;
  /** Fills `dst` with the bytes at `position`. */
  readInto(dst: Uint8Array, position: number): void;
  close(): void;
}

/** A file opened for positioned reads: no part of it is held in memory beyond what is read. */
export function openByteFile(path: string): ByteSource {
  let fd: number;
  try {
    fd = openSync(path, 'r');
  } catch (e) {
    throw checkpointError(path, `cannot read (${(e as Error).message})`);
  }
  const size = fstatSync(fd).size;
  return {
    path,
    size,
    readInto(dst, position) {
      for (let done = 0; done < dst.byteLength; ) {
        const n = readSync(
          fd,
          dst,
          done,
          Math.min(dst.byteLength - done, MAX_IO_BYTES),
          position + done,
        );
        if (n === 0)
          throw checkpointError(
            path,
            `the file ended at byte ${position + done} while reading (did it shrink?)`,
          );
        done += n;
      }
    },
    close: () => closeSync(fd),
  };
}

/** A buffer as a ByteSource. */
export function byteBuffer(bytes: Uint8Array, path: string): ByteSource {
  return {
    path,
    size: bytes.byteLength,
    readInto(dst, position) {
      if (position + dst.byteLength > bytes.byteLength)
        throw checkpointError(path, `read past the end at byte ${bytes.byteLength}`);
      dst.set(bytes.subarray(position, position + dst.byteLength));
    },
    close() {},
  };
}

/** Writes all of `data` at `position` of the open file `fd`. */
export function writeAt(fd: number, data: Uint8Array, position: number): void {
  for (let done = 0; done < data.byteLength; ) {
    done += writeSync(
      fd,
      data,
      done,
      Math.min(data.byteLength - done, MAX_IO_BYTES),
      position + done,
    );
  }
}
