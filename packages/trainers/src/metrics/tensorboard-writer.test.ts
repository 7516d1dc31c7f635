import { readFileSync } from 'node:fs';
import { tempDir } from '@rl2/vitest-config/temp-dir';
import { describe, expect, it } from 'vitest';
import { crc32c, maskedCrc32c } from './crc32c.js';
import { TensorBoardWriter } from './tensorboard-writer.js';

/** Independent reader: TFRecord framing + the protobuf fields of Event/Summary/Value. */
function readRecords(buf: Uint8Array): Uint8Array[] {
  const view = new DataView(buf.buffer, buf.byteOffset, buf.byteLength);
  const out: Uint8Array[] = [];
  let at = 0;
  while (at < buf.length) {
    const len = Number(view.getBigUint64(at, true));
    expect(view.getUint32(at + 8, true)).toBe(maskedCrc32c(buf.subarray(at, at + 8)));
    const data = buf.subarray(at + 12, at + 12 + len);
    expect(view.getUint32(at + 12 + len, true)).toBe(maskedCrc32c(data));
    out.push(data);
    at += 16 + len;
  }
  return out;
}

type Field = { field: number; value: number | bigint | Uint8Array };
function decode(buf: Uint8Array): Field[] {
  const view = new DataView(buf.buffer, buf.byteOffset, buf.byteLength);
  const fields: Field[] = [];
  let at = 0;
  const varint = () => {
    let v = 0n;
    let shift = 0n;
    for (;;) {
      const b = buf[at++];
      v |= BigInt(b & 0x7f) << shift;
      shift += 7n;
      if (!(b & 0x80)) return v;
    }
  };
  while (at < buf.length) {
    const key = Number(varint());
    const field = key >> 3;
    const wire = key & 7;
    if (wire === 0) fields.push({ field, value: varint() });
    else if (wire === 1) {
      fields.push({ field, value: view.getFloat64(at, true) });
      at += 8;
    } else if (wire === 5) {
      fields.push({ field, value: view.getFloat32(at, true) });
      at += 4;
    } else if (wire === 2) {
      const len = Number(varint());
      fields.push({ field, value: buf.subarray(at, at + len) });
      at += len;
    } else throw new Error(`wire type ${wire}`);
  }
  return fields;
}

describe('crc32c', () => {
  it('standard check values', () => {
    expect(crc32c(new TextEncoder().encode('123456789'))).toBe(0xe3069283);
    expect(crc32c(new Uint8Array(32))).toBe(0x8a9136aa);
  });
});

describe('TensorBoardWriter', () => {
  it('writes a file_version header and scalar events that parse back', () => {
    const dir = tempDir('rl2-tb-');
    let t = 1_700_000_000_000;
    const w = new TensorBoardWriter(dir, () => t);
    t += 1500;
    w.addScalars(7, { 'train/loss': 1.25, 'train/lr': 1e-5, 'train/bad': Number.NaN });
    w.addScalars(300, { 'test/loss': 0.5 });
    const records = readRecords(new Uint8Array(readFileSync(w.file)));
    expect(records).toHaveLength(3);
    const header = decode(records[0]);
    expect(header[0]).toEqual({ field: 1, value: 1_700_000_000 });
    expect(new TextDecoder().decode(header[1].value as Uint8Array)).toBe('brain.Event:2');

    const ev = decode(records[1]);
    expect(ev[0]).toEqual({ field: 1, value: 1_700_000_001.5 });
    expect(ev[1]).toEqual({ field: 2, value: 7n });
    expect(ev[2].field).toBe(5);
    const values = decode(ev[2].value as Uint8Array).map((v) => decode(v.value as Uint8Array));
    expect(values).toHaveLength(2);
    expect(new TextDecoder().decode(values[0][0].value as Uint8Array)).toBe('train/loss');
    expect(values[0][1]).toEqual({ field: 2, value: 1.25 });
    expect(values[1][1].value as number).toBeCloseTo(1e-5, 10);
    expect(decode(records[2])[1]).toEqual({ field: 2, value: 300n });
  });
});
