import { rmSync } from 'node:fs';
import { chmodSync, mkdirSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { tempDir } from '@rl2/vitest-config/temp-dir';
import { describe, expect, it } from 'vitest';
import type { DataError } from '../errors.js';
import { loadDataset } from './load-dataset.js';
import { openDataset } from './open-dataset.js';
import { parseDataSpec } from './parse-data-spec.js';
import { selectSplitFiles } from './select-split-files.js';
import { splitTrainTest } from './split-train-test.js';

function shards(): string {
  const dir = tempDir('rl2-shards-');
  mkdirSync(join(dir, 'data'));
  writeFileSync(join(dir, 'data', 'train-00000-of-00002.jsonl'), '{"i":0}\n{"i":1}\n');
  writeFileSync(join(dir, 'data', 'train-00001-of-00002.jsonl'), '{"i":2}\n');
  writeFileSync(join(dir, 'data', 'test-00000-of-00001.csv'), 'i\n9\n');
  writeFileSync(join(dir, 'README.md'), '# not data');
  return dir;
}

describe('parseDataSpec', () => {
  it('splits split@path and defaults to train', () => {
    expect(parseDataSpec('test@openai/gsm8k')).toEqual({ split: 'test', path: 'openai/gsm8k' });
    expect(parseDataSpec('data/x.jsonl')).toEqual({ split: 'train', path: 'data/x.jsonl' });
    expect(parseDataSpec('/a/b@c/x.jsonl')).toEqual({ split: 'train', path: '/a/b@c/x.jsonl' });
  });
});

describe('selectSplitFiles', () => {
  it('matches split names in folders and file names, all files for train when none are named', () => {
    expect(
      selectSplitFiles(['default/train/0000.parquet', 'default/test/0000.parquet'], 'test'),
    ).toEqual(['default/test/0000.parquet']);
    expect(
      selectSplitFiles(
        ['ds-train.arrow', 'ds-validation.arrow', 'cache-abc.arrow', 'dataset_info.json'],
        'validation',
      ),
    ).toEqual(['ds-validation.arrow']);
    expect(selectSplitFiles(['a.jsonl', 'b.jsonl'], 'train')).toEqual(['a.jsonl', 'b.jsonl']);
    expect(selectSplitFiles(['a.jsonl', 'contest.jsonl'], 'test')).toEqual([]);
  });
});

describe('loadDataset', () => {
  it('reads a folder of shards in order, per split', async () => {
    const dir = shards();
    const train = await loadDataset(dir);
    expect(train.rows).toEqual([{ i: 0 }, { i: 1 }, { i: 2 }]);
    expect(train.origins.map((o) => o.row)).toEqual([1, 2, 1]);
    expect((await loadDataset(`test@${dir}`)).rows).toEqual([{ i: '9' }]);
    await expect(loadDataset(`dev@${dir}`)).rejects.toThrowError(
      /No files for split "dev".*splits found: train, test/,
    );
  });
  it('reads a single file as the train split and refuses any other split of it (as datasets does)', async () => {
    const dir = tempDir('rl2-one-file-');
    try {
      const file = join(dir, 'rows.jsonl');
      writeFileSync(file, '{"i":0}\n{"i":1}\n');
      expect((await loadDataset(file)).rows).toHaveLength(2);
      expect((await loadDataset(`train@${file}`)).rows).toHaveLength(2);
      const err = (await loadDataset(`test@${file}`).catch((e) => e)) as DataError;
      expect(err.code).toBe('INVALID_ARGUMENT');
      expect(err.message).toContain(`Split "test" does not apply to the file ${file}`);
      expect(err.message).toContain('without "test@"');
    } finally {
      rmSync(dir, { recursive: true, force: true });
    }
  });
  it('streams without collecting, filling stats as it goes', async () => {
    const ds = await openDataset(shards());
    let n = 0;
    for await (const _ of ds.rows()) n += 1;
    expect(n).toBe(3);
    expect(ds.stats.rowsRead).toBe(3);
    expect(ds.files.length).toBe(2);
  });
  it('reports skipped rows in stats and fails on an all-skipped file', async () => {
    const dir = tempDir('rl2-bad-');
    writeFileSync(join(dir, 'x.jsonl'), '{"a":1}\nnot json\n[1]\n');
    const ds = await loadDataset(join(dir, 'x.jsonl'), { onBadRow: 'skip' });
    expect(ds.rows).toEqual([{ a: 1 }]);
    expect(ds.stats).toMatchObject({ rowsRead: 1, rowsSkipped: 2 });
    expect(ds.stats.skipped.map((s) => s.row)).toEqual([2, 3]);
    writeFileSync(join(dir, 'y.jsonl'), 'nope\n');
    await expect(loadDataset(join(dir, 'y.jsonl'), { onBadRow: 'skip' })).rejects.toThrowError(
      /has no rows \(1 rows were skipped/,
    );
  });
  it('gives distinct errors for empty, unsupported, missing and unreadable inputs', async () => {
    const dir = tempDir('rl2-err-');
    writeFileSync(join(dir, 'empty.jsonl'), '\n');
    writeFileSync(join(dir, 'x.txt'), 'hi');
    const code = async (spec: string) =>
      ((await loadDataset(spec).catch((e) => e)) as DataError).code;
    expect(await code(join(dir, 'empty.jsonl'))).toBe('EMPTY_DATASET');
    expect(await code(join(dir, 'x.txt'))).toBe('UNSUPPORTED_FORMAT');
    expect(await code(join(dir, 'missing.jsonl'))).toBe('FILE_NOT_FOUND');
    mkdirSync(join(dir, 'none'));
    expect(await code(join(dir, 'none'))).toBe('EMPTY_DATASET');
    if (process.getuid?.() !== 0) {
      writeFileSync(join(dir, 'locked.jsonl'), '{}');
      chmodSync(join(dir, 'locked.jsonl'), 0);
      expect(await code(join(dir, 'locked.jsonl'))).toBe('UNREADABLE_FILE');
    }
  });
});

describe('splitTrainTest', () => {
  it('is deterministic for a seed, disjoint and complete, with round(n * ratio) test rows', () => {
    const a = splitTrainTest(1000);
    expect(a).toEqual(splitTrainTest(1000));
    expect(a.test.length).toBe(30);
    expect(new Set([...a.train, ...a.test]).size).toBe(1000);
    expect(splitTrainTest(1000, 0.03, 7).test).not.toEqual(a.test);
    expect(splitTrainTest(10).test.length).toBe(1);
    expect(splitTrainTest(10, 0).test).toEqual([]);
    expect(() => splitTrainTest(10, 1)).toThrowError(/test_ratio/);
  });
});
