import {
  closeSync,
  mkdirSync,
  openSync,
  statSync,
  truncateSync,
  writeFileSync,
  writeSync,
} from 'node:fs';
import { join } from 'node:path';
import { tempDir } from '@rl2/vitest-config/temp-dir';
import { describe, expect, it } from 'vitest';
import { CheckpointReader } from './checkpoint-reader.js';
import type { SafetensorsDtype } from './float-formats.js';
import { SafetensorsReader } from './safetensors-reader.js';
import { SafetensorsWriter, serializeSafetensors } from './safetensors-writer.js';

const tmp = tempDir('rl2-safetensors-');

const GiB = 2 ** 30;

/**
 * Writes a safetensors file by hand (independently of SafetensorsWriter): a header declaring
 * `hole` (never written: a sparse hole of `holeBytes`) then `tail`, whose bytes are written at
 * their offset past the hole. Costs no disk and no time however large the hole.
 */
function sparseFile(
  path: string,
  holeBytes: number,
  tail: { dtype: SafetensorsDtype; bytes: Uint8Array; shape: number[] },
): number {
  const header = {
    hole: { dtype: 'F32', shape: [holeBytes / 4], data_offsets: [0, holeBytes] },
    tail: {
      dtype: tail.dtype,
      shape: tail.shape,
      data_offsets: [holeBytes, holeBytes + tail.bytes.length],
    },
  };
  let json = JSON.stringify(header);
  json += ' '.repeat((8 - (json.length % 8)) % 8);
  const head = Buffer.alloc(8 + json.length);
  head.writeBigUInt64LE(BigInt(json.length), 0);
  head.write(json, 8);
  const fd = openSync(path, 'w');
  writeSync(fd, head, 0, head.length, 0);
  writeSync(fd, tail.bytes, 0, tail.bytes.length, head.length + holeBytes);
  closeSync(fd);
  return head.length + holeBytes;
}

const bf16 = (values: number[]) =>
  new Uint8Array(
    Uint16Array.from(values.map((v) => new Uint32Array(Float32Array.of(v).buffer)[0]! >>> 16))
      .buffer,
  );

describe('safetensors files of any size', () => {
  it.each([
    ['past 2 GiB', 2 * GiB + 64],
    ['past 4 GiB', 4 * GiB + 4096],
  ])('reads a tensor lying %s in a sparse file, in its dtype', (_, hole) => {
    const path = join(tmp, `big-${hole}.safetensors`);
    const at = sparseFile(path, hole, {
      dtype: 'BF16',
      shape: [2, 2],
      bytes: bf16([1.5, -2, 0.25, 2 ** 100]),
    });
    expect(statSync(path).size).toBeGreaterThan(hole);
    const r = SafetensorsReader.open(path);
    expect(r.entry('tail')?.start).toBe(at);
    const t = r.read('tail');
    r.close();
    expect(t.shape).toEqual([2, 2]);
    expect([...t.data]).toEqual([1.5, -2, 0.25, 2 ** 100]);
  });

  it('writes tensors at their place past 4 GiB (positioned writes into a sparse file)', () => {
    const path = join(tmp, 'written-big.safetensors');
    const w = SafetensorsWriter.create(
      path,
      [
        { name: 'a.hole', shape: [GiB + 16] },
        { name: 'b.tail', shape: [3] },
      ],
      'F32',
    );
    w.write('b.tail', Float32Array.from([7, -8, 9.5]));
    expect(() => w.close()).toThrow(/1 planned tensor\(s\) were never written \(a\.hole\)/);
    const r = SafetensorsReader.open(path);
    expect(r.entry('b.tail')!.start).toBeGreaterThan(4 * GiB);
    expect([...r.read('b.tail').data]).toEqual([7, -8, 9.5]);
    r.close();
  });

  it('reads sharded checkpoints whose shards are each over 2 GiB', () => {
    const dir = join(tmp, 'sharded');
    mkdirSync(dir);
    const f32 = (xs: number[]) => new Uint8Array(Float32Array.from(xs).buffer);
    sparseFile(join(dir, 'model-00001-of-00002.safetensors'), 2 * GiB + 8, {
      dtype: 'F32',
      shape: [2],
      bytes: f32([0.5, 1]),
    });
    sparseFile(join(dir, 'model-00002-of-00002.safetensors'), 3 * GiB, {
      dtype: 'BF16',
      shape: [1],
      bytes: bf16([-4]),
    });
    // both files hold a "hole" and a "tail": the index picks the first's tail and the second's hole
    writeFileSync(
      join(dir, 'model.safetensors.index.json'),
      JSON.stringify({
        metadata: { total_size: 5 * GiB + 18 },
        weight_map: {
          tail: 'model-00001-of-00002.safetensors',
          hole: 'model-00002-of-00002.safetensors',
        },
      }),
    );
    const r = CheckpointReader.open(dir);
    expect(r.names().sort()).toEqual(['hole', 'tail']);
    expect([...r.read('tail').data]).toEqual([0.5, 1]);
    expect(r.entry('hole')!.byteLength).toBe(3 * GiB);
    r.close();
    const bad = join(dir, 'model.safetensors.index.json');
    writeFileSync(
      bad,
      JSON.stringify({ weight_map: { nope: 'model-00001-of-00002.safetensors' } }),
    );
    expect(() => CheckpointReader.open(dir)).toThrow(
      /weight_map puts nope in model-00001-of-00002\.safetensors, which has no such tensor/,
    );
  });
});

describe('damaged files', () => {
  it('says how many bytes a truncated file lacks, naming it', () => {
    const path = join(tmp, 'cut.safetensors');
    writeFileSync(
      path,
      serializeSafetensors(new Map([['w', { shape: [10], data: new Float32Array(10) }]])),
    );
    truncateSync(path, statSync(path).size - 12);
    expect(() => SafetensorsReader.open(path)).toThrow(
      `${path}: the file is 12 bytes shorter than its header says`,
    );
    truncateSync(path, 20);
    expect(() => SafetensorsReader.open(path)).toThrow(
      /cut\.safetensors: the file is at least \d+ bytes shorter than its header says/,
    );
    writeFileSync(path, 'not a safetensors file at all');
    expect(() => SafetensorsReader.open(path)).toThrow(/cut\.safetensors: not a safetensors file/);
  });

  it('names the tensor whose offsets do not fit its shape, and unsupported dtypes', () => {
    const bytes = serializeSafetensors(new Map([['w', { shape: [2], data: new Float32Array(2) }]]));
    const n = Number(new DataView(bytes.buffer).getBigUint64(0, true));
    const edit = (from: string, to: string) => {
      const copy = new Uint8Array(bytes);
      copy.set(
        new TextEncoder().encode(
          new TextDecoder().decode(bytes.subarray(8, 8 + n)).replace(from, to),
        ),
        8,
      );
      return copy;
    };
    expect(() => SafetensorsReader.fromBytes(edit('[2]', '[3]'), 'x.safetensors')).toThrow(
      /x\.safetensors: tensor "w" offsets \[0,8\] do not fit shape \[3\] F32/,
    );
    expect(() => SafetensorsReader.fromBytes(edit('"F32"', '"I32"'), 'x.safetensors')).toThrow(
      /tensor "w" has dtype I32; only F32, F16 and BF16/,
    );
  });
});
