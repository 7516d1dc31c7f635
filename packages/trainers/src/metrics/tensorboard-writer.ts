import { appendFileSync, mkdirSync, writeFileSync } from 'node:fs';
import { hostname } from 'node:os';
import { join } from 'node:path';
import { maskedCrc32c } from './crc32c.js';
import { ProtobufWriter } from './protobuf-writer.js';

/**
 * One TFRecord: uint64 length, masked crc32c(length), data, masked crc32c(data), little-endian
 * (https://www.tensorflow.org/tutorials/load_data/tfrecord#tfrecords_format_details).
 */
function tfRecord(data: Uint8Array): Uint8Array {
  const out = new Uint8Array(8 + 4 + data.length + 4);
  const view = new DataView(out.buffer);
  view.setBigUint64(0, BigInt(data.length), true);
  view.setUint32(8, maskedCrc32c(out.subarray(0, 8)), true);
  out.set(data, 12);
  view.setUint32(12 + data.length, maskedCrc32c(data), true);
  return out;
}

/** tensorflow.Event { wall_time = 1 (double); step = 2 (int64); file_version = 3; summary = 5 }. */
function scalarEvent(step: number, wallTime: number, scalars: Record<string, number>): Uint8Array {
  const summary = new ProtobufWriter();
  for (const [tag, value] of Object.entries(scalars)) {
    // Summary.Value { tag = 1; simple_value = 2 (float) }
    summary.bytes(1, new ProtobufWriter().bytes(1, tag).float(2, value).finish());
  }
  return new ProtobufWriter().double(1, wallTime).int(2, step).bytes(5, summary.finish()).finish();
}

/** Writes TensorBoard scalar event files (`events.out.tfevents.<time>.<host>`) without TensorFlow. */
export class TensorBoardWriter {
  readonly file: string;

  constructor(
    dir: string,
    private readonly now: () => number = Date.now,
  ) {
    mkdirSync(dir, { recursive: true });
    const t = now() / 1000;
    this.file = join(dir, `events.out.tfevents.${Math.floor(t)}.${hostname()}.rl2`);
    const header = new ProtobufWriter().double(1, t).bytes(3, 'brain.Event:2').finish();
    writeFileSync(this.file, tfRecord(header));
  }

  /** Appends one Event holding every finite scalar of `scalars` at `step`. */
  addScalars(step: number, scalars: Record<string, number>): void {
    const finite = Object.fromEntries(
      Object.entries(scalars).filter(([, v]) => Number.isFinite(v)),
    );
    if (Object.keys(finite).length === 0) return;
    appendFileSync(this.file, tfRecord(scalarEvent(step, this.now() / 1000, finite)));
  }
}
