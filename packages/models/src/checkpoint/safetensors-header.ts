import { ModelsError } from '../errors.js';
import { DTYPE_BYTES, type SafetensorsDtype } from './float-formats.js';

/** A tensor to be written: its name and shape. */
export interface TensorSpec {
  readonly name: string;
  readonly shape: readonly number[];
}

/** Where one tensor's bytes lie in a safetensors file. */
export interface TensorEntry {
  readonly name: string;
  readonly dtype: SafetensorsDtype;
  readonly shape: number[];
  /** Absolute byte offset of the first element in the file. */
  readonly start: number;
  readonly byteLength: number;
}

/** A parsed (or planned) safetensors header. */
export interface SafetensorsHeader {
  /** Tensors by name. */
  readonly entries: Map<string, TensorEntry>;
  readonly metadata: Record<string, string>;
  /** Size of the whole file the header describes, bytes. */
  readonly fileSize: number;
}

/** The safetensors reference rejects headers over 100 MB; so do we, before allocating one. */
const MAX_HEADER_BYTES = 100_000_000;

/** Number of elements of `shape` (1 for a scalar). */
export const elementCount = (shape: readonly number[]) => shape.reduce((a, b) => a * b, 1);

/** `path: why` as a CHECKPOINT_ERROR. */
export const checkpointError = (path: string, why: string) =>
  new ModelsError('CHECKPOINT_ERROR', `${path}: ${why}`);

function cutOff(path: string, missing: number, atLeast = false): ModelsError {
  return checkpointError(
    path,
    `the file is ${atLeast ? 'at least ' : ''}${missing} bytes shorter than its header says; it ` +
      `was cut off (an interrupted download, copy or save): download or save it again`,
  );
}

/**
 * The JSON header length from the file's first 8 bytes (u64 little-endian), checked against
 * the file size. https://github.com/huggingface/safetensors#format
 */
export function headerLength(first8: Uint8Array, fileSize: number, path: string): number {
  if (fileSize < 8) throw cutOff(path, 8 - fileSize, true);
  const n = Number(new DataView(first8.buffer, first8.byteOffset, 8).getBigUint64(0, true));
  if (n > MAX_HEADER_BYTES)
    throw checkpointError(
      path,
      `not a safetensors file (its first 8 bytes give a header of ${n} bytes)`,
    );
  if (8 + n > fileSize) throw cutOff(path, 8 + n - fileSize, true);
  return n;
}

/**
 * Parses the JSON header (`{name: {dtype, shape, data_offsets: [begin, end]}, __metadata__?}`)
 * of a file of `fileSize` bytes whose header is `json.length` bytes long. Checks every dtype,
 * shape and offset, and that the file holds all the bytes the header promises.
 */
export function parseHeader(json: Uint8Array, fileSize: number, path: string): SafetensorsHeader {
  let raw: Record<string, { dtype?: string; shape?: unknown; data_offsets?: unknown }>;
  try {
    raw = JSON.parse(new TextDecoder().decode(json));
  } catch (e) {
    throw checkpointError(path, `header is not valid JSON (${(e as Error).message})`);
  }
  if (raw === null || typeof raw !== 'object' || Array.isArray(raw))
    throw checkpointError(path, 'header is not a JSON object');
  const dataStart = 8 + json.length;
  const entries = new Map<string, TensorEntry>();
  let end = dataStart;
  for (const [name, info] of Object.entries(raw)) {
    if (name === '__metadata__') continue;
    const entry = parseEntry(name, info, dataStart, path);
    entries.set(name, entry);
    end = Math.max(end, entry.start + entry.byteLength);
  }
  if (fileSize < end) throw cutOff(path, end - fileSize);
  return {
    entries,
    metadata: (raw.__metadata__ as Record<string, string> | undefined) ?? {},
    fileSize: end,
  };
}

function parseEntry(
  name: string,
  info: { dtype?: string; shape?: unknown; data_offsets?: unknown },
  dataStart: number,
  path: string,
): TensorEntry {
  const dtype = info?.dtype as SafetensorsDtype;
  if (!(dtype in DTYPE_BYTES))
    throw checkpointError(
      path,
      `tensor "${name}" has dtype ${info?.dtype}; only F32, F16 and BF16 are supported`,
    );
  const shape = info.shape;
  if (!Array.isArray(shape) || !shape.every((d) => Number.isInteger(d) && d >= 0))
    throw checkpointError(path, `tensor "${name}" has no valid shape`);
  const offsets = info.data_offsets as [number, number] | undefined;
  const [begin, stop] = Array.isArray(offsets) ? offsets : [Number.NaN, Number.NaN];
  if (
    !(Number.isInteger(begin) && Number.isInteger(stop) && begin >= 0) ||
    stop - begin !== elementCount(shape) * DTYPE_BYTES[dtype]
  ) {
    throw checkpointError(
      path,
      `tensor "${name}" offsets [${offsets}] do not fit shape [${shape}] ${dtype}`,
    );
  }
  return { name, dtype, shape: [...shape], start: dataStart + begin, byteLength: stop - begin };
}

/**
 * Plans a file holding `specs` as `dtype`: tensors sorted by name (as the Python writer does),
 * contiguous, header padded with spaces to a multiple of 8. Returns the 8 + N header bytes and
 * where each tensor goes.
 */
export function buildHeader(
  specs: readonly TensorSpec[],
  dtype: SafetensorsDtype,
  metadata: Record<string, string>,
): { bytes: Uint8Array; header: SafetensorsHeader } {
  const sorted = [...specs].sort((a, b) => (a.name < b.name ? -1 : a.name > b.name ? 1 : 0));
  const json: Record<string, unknown> = {};
  let offset = 0;
  for (const s of sorted) {
    if (s.name in json || s.name === '__metadata__')
      throw new ModelsError(
        'INVALID_ARGUMENT',
        `tensor name "${s.name}" is given twice or reserved`,
      );
    const bytes = elementCount(s.shape) * DTYPE_BYTES[dtype];
    json[s.name] = { dtype, shape: s.shape, data_offsets: [offset, offset + bytes] };
    offset += bytes;
  }
  json.__metadata__ = metadata;
  let text = JSON.stringify(json);
  const encoder = new TextEncoder();
  text += ' '.repeat((8 - (encoder.encode(text).length % 8)) % 8);
  const head = encoder.encode(text);
  const bytes = new Uint8Array(8 + head.length);
  new DataView(bytes.buffer).setBigUint64(0, BigInt(head.length), true);
  bytes.set(head, 8);
  const entries = new Map<string, TensorEntry>();
  for (const s of sorted) {
    const [begin, stop] = (json[s.name] as { data_offsets: [number, number] }).data_offsets;
    entries.set(s.name, {
      name: s.name,
      dtype,
      shape: [...s.shape],
      start: bytes.length + begin,
      byteLength: stop - begin,
    });
  }
  return { bytes, header: { entries, metadata, fileSize: bytes.length + offset } };
}
