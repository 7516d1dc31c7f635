import { spawn } from 'node:child_process';
import {
  existsSync,
  mkdirSync,
  readdirSync,
  readFileSync,
  renameSync,
  writeFileSync,
} from 'node:fs';
import { basename, join } from 'node:path';
import { tempDir } from '@rl2/vitest-config/temp-dir';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { initEngine } from '@rl2/engine';
import type { DecoderModel } from '../model/decoder-model.js';
import { disposeParams } from '../model/param-map.js';
import { recoverInterruptedSave } from '../atomic/atomic-dir.js';
import { CheckpointReader, readCheckpointWeights } from './checkpoint-reader.js';
import { CheckpointWriter } from './checkpoint-writer.js';
import {
  decodeFloats,
  encodeFloats,
  type SafetensorsDtype,
  TORCH_DTYPES,
  type TorchDtype,
} from './float-formats.js';
import { loadModel } from './load-checkpoint.js';
import { saveModel } from './save-model.js';

const FIX = join(import.meta.dirname, '..', '..', 'fixtures');
const tmp = tempDir('rl2-ckpt-writer-');
let model: DecoderModel;

beforeAll(async () => {
  await initEngine({ backend: 'cpu', logger: () => {} });
  model = (await loadModel(join(FIX, 'qwen3'))).model;
});
afterAll(() => disposeParams(model.params));

/** What a value becomes once stored as `dtype` (the conversions are checked against torch in python-interop). */
function rounded(data: Float32Array, dtype: SafetensorsDtype): Float32Array {
  const bytes = new Uint8Array(data.length * (dtype === 'F32' ? 4 : 2));
  encodeFloats(data, dtype, bytes);
  const out = new Float32Array(data.length);
  decodeFloats(bytes, dtype, out, 0);
  return out;
}

const shardFiles = (dir: string) =>
  readdirSync(dir)
    .filter((f) => f.endsWith('.safetensors'))
    .sort();

describe('saveModel', () => {
  it.each(
    (['float32', 'bfloat16', 'float16'] as TorchDtype[]).flatMap(
      (d) =>
        [
          [d, 'single'],
          [d, 'sharded'],
        ] as const,
    ),
  )('%s, %s: reloads to the stored rounding of every weight', async (dtype, layout) => {
    const dir = join(tmp, `${dtype}-${layout}`);
    const files = await saveModel(dir, model, {
      dtype,
      maxShardSize: layout === 'sharded' ? '4KB' : '5GB',
    });
    expect(files.map((f) => basename(f))).toContain('config.json');
    expect(JSON.parse(readFileSync(join(dir, 'config.json'), 'utf8')).torch_dtype).toBe(dtype);
    const shards = shardFiles(dir);
    if (layout === 'single') expect(shards).toEqual(['model.safetensors']);
    else {
      expect(shards.length).toBeGreaterThan(2);
      const index = JSON.parse(readFileSync(join(dir, 'model.safetensors.index.json'), 'utf8'));
      expect(Object.keys(index.weight_map).sort()).toEqual([...model.params.keys()].sort());
      const bytes = dtype === 'float32' ? 4 : 2;
      expect(index.metadata.total_size).toBe(
        [...model.params.values()].reduce((s, p) => s + p.size * bytes, 0),
      );
    }
    const reader = CheckpointReader.open(dir);
    expect(new Set(reader.names().map((n) => reader.entry(n)!.dtype))).toEqual(
      new Set([TORCH_DTYPES[dtype]]),
    );
    reader.close();
    const back = await readCheckpointWeights(dir);
    for (const [name, p] of model.params) {
      expect(back.get(name)!.shape, name).toEqual(p.shape);
      expect(back.get(name)!.data, name).toEqual(
        rounded(p.dataSync() as Float32Array, TORCH_DTYPES[dtype]),
      );
    }
  });

  it("defaults to the loaded checkpoint's torch_dtype, and bf16 weights resave bit-identically", async () => {
    const { model: bf } = await loadModel(join(FIX, 'llama-bf16-sharded'));
    const dir = join(tmp, 'resaved-bf16');
    await saveModel(dir, bf);
    expect(JSON.parse(readFileSync(join(dir, 'config.json'), 'utf8')).torch_dtype).toBe('bfloat16');
    const before = await readCheckpointWeights(join(FIX, 'llama-bf16-sharded'));
    const after = await readCheckpointWeights(dir);
    for (const [name, t] of before) expect(after.get(name)!.data, name).toEqual(t.data);
    disposeParams(bf.params);
  });

  it('keeps the other files of the folder it replaces and drops stale shards', async () => {
    const dir = join(tmp, 'replace');
    await saveModel(dir, model, { maxShardSize: '4KB' });
    writeFileSync(join(dir, 'README.md'), '# my model\n');
    await saveModel(dir, model);
    expect(shardFiles(dir)).toEqual(['model.safetensors']);
    expect(existsSync(join(dir, 'model.safetensors.index.json'))).toBe(false);
    expect(readFileSync(join(dir, 'README.md'), 'utf8')).toBe('# my model\n');
  });

  it('an error mid-save leaves the previous checkpoint as it was and no work folder', async () => {
    const dir = join(tmp, 'failing');
    await saveModel(dir, model);
    const before = readFileSync(join(dir, 'model.safetensors'));
    const failing = saveModel(dir, model, {
      dtype: 'bfloat16',
      addFiles: () => {
        throw new Error('disk full');
      },
    });
    await expect(failing).rejects.toThrow('disk full');
    expect(readFileSync(join(dir, 'model.safetensors')).equals(before)).toBe(true);
    expect(readdirSync(tmp).filter((n) => n.startsWith('.'))).toEqual([]);
    expect((await loadModel(dir)).model.config.raw.torch_dtype).toBe('float32');
  });
});

describe('a save killed mid-way (SIGKILL)', () => {
  const killedSave = async (dir: string, phase: 'tensors' | 'commit') => {
    const child = spawn(
      process.execPath,
      [
        '--import',
        'tsx',
        join(import.meta.dirname, '../../test/scripts/save-then-hang.ts'),
        dir,
        phase,
      ],
      { stdio: ['ignore', 'pipe', 'inherit'] },
    );
    await new Promise<void>((resolve, reject) => {
      child.stdout.on('data', (b: Buffer) => b.toString().includes('HANG') && resolve());
      child.on('exit', (code) =>
        reject(new Error(`the saving process exited (${code}) before it hung`)),
      );
    });
    const exited = new Promise((resolve) => child.on('exit', resolve));
    child.kill('SIGKILL');
    await exited;
  };

  it.each(['tensors', 'commit'] as const)(
    'while writing (%s): the previous checkpoint loads, nothing partial in it, the next save cleans up',
    async (phase) => {
      const parent = join(tmp, `killed-${phase}`);
      const dir = join(parent, 'model');
      mkdirSync(parent);
      await saveModel(dir, model);
      const files = readdirSync(dir).sort();
      await killedSave(dir, phase);
      expect(readdirSync(dir).sort()).toEqual(files);
      expect((await loadModel(dir)).model.config.raw.note).toBeUndefined();
      const left = readdirSync(parent).filter((n) => n !== 'model');
      expect(left).toHaveLength(1);
      expect(left[0]).toMatch(/^\.tmp-\d+-\d+-model$/);
      await saveModel(dir, model, { dtype: 'bfloat16' });
      expect(readdirSync(parent)).toEqual(['model']);
    },
    30_000,
  );

  it('between its two renames: the previous folder is put back', async () => {
    const parent = join(tmp, 'killed-rename');
    const dir = join(parent, 'model');
    mkdirSync(parent);
    await saveModel(dir, model);
    renameSync(dir, join(parent, '.old-999999999-1-model')); // as left by a process that no longer exists
    expect(recoverInterruptedSave(dir)).toBe(true);
    expect(readdirSync(parent)).toEqual(['model']);
    expect((await loadModel(dir)).model.config.family).toBe('qwen3');
  });
});

describe('CheckpointWriter', () => {
  it('takes tensors in any order and refuses to commit with one missing', () => {
    const dir = join(tmp, 'incomplete');
    const w = CheckpointWriter.open(dir, [
      { name: 'a', shape: [2] },
      { name: 'b', shape: [3] },
    ]);
    w.write('b', Float32Array.of(1, 2, 3));
    expect(() => w.write('c', Float32Array.of(1))).toThrow(
      /tensor "c" is not part of this checkpoint/,
    );
    expect(() => w.write('a', Float32Array.of(1))).toThrow(/shape \[2\] needs 2 values, has 1/);
    expect(() => w.commit()).toThrow(/1 planned tensor\(s\) were never written \(a\)/);
    expect(existsSync(dir)).toBe(false);
    expect(readdirSync(tmp).filter((n) => n.includes('incomplete'))).toEqual([]);
  });
});
