import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { tableFromIPC } from 'apache-arrow';
import { asyncBufferFromFile, parquetMetadataAsync } from 'hyparquet';
import * as pw from 'parquet-wasm/node';
import { describe, expect, it } from 'vitest';
import { FIXTURE_ROWS } from '../../test/fixture-rows.js';
import { DataError } from '../errors.js';
import { loadDataset } from './load-dataset.js';
import { plainValue } from './plain-value.js';
import { readArrow } from './read-arrow.js';
import { readParquet } from './read-parquet.js';
import type { RowWithOrigin } from './row-with-origin.js';

const col = (name: string) => join(import.meta.dirname, '../../test/fixtures/columnar', name);
async function rows(gen: AsyncGenerator<RowWithOrigin[]>) {
  const out: Record<string, unknown>[] = [];
  for await (const batch of gen) for (const r of batch) out.push(r.row);
  return out;
}

describe('readParquet', () => {
  for (const codec of ['snappy', 'zstd', 'gzip']) {
    it(`reads ${codec} row groups into plain rows`, async () => {
      const file = col(`rows.${codec}.parquet`);
      const meta = await parquetMetadataAsync(await asyncBufferFromFile(file));
      expect(meta.row_groups.length).toBe(2);
      expect(meta.row_groups[0]?.columns[0]?.meta_data?.codec).toBe(codec.toUpperCase());
      expect(await rows(readParquet(file))).toEqual(FIXTURE_ROWS);
    });
  }
  it('agrees with an independent reader (parquet-wasm / arrow-rs)', async () => {
    const file = col('rows.zstd.parquet');
    const ref = tableFromIPC(pw.readParquet(readFileSync(file)).intoIPCStream());
    const expected = ref.toArray().map((r) => plainValue(r));
    expect(await rows(readParquet(file))).toEqual(expected);
  });
  it('reports a corrupt file as UNREADABLE_FILE', async () => {
    const e = (await rows(readParquet(col('../sft.csv'))).catch((x) => x)) as DataError;
    expect(e).toBeInstanceOf(DataError);
    expect(e.code).toBe('UNREADABLE_FILE');
    expect(e.message).toContain('sft.csv is not a readable Parquet file');
  });
});

describe('readArrow', () => {
  it('reads an IPC stream written like datasets save_to_disk', async () => {
    expect(await rows(readArrow(col('saved/data-00000-of-00001.arrow')))).toEqual(FIXTURE_ROWS);
  });
  it('reads an IPC file with several record batches', async () => {
    expect(await rows(readArrow(col('rows.file.arrow')))).toEqual(FIXTURE_ROWS);
  });
  it('reports a non-Arrow file as UNREADABLE_FILE', async () => {
    const e = (await rows(readArrow(col('../sft.jsonl'))).catch((x) => x)) as DataError;
    expect(e.code).toBe('UNREADABLE_FILE');
  });
});

describe('loadDataset on datasets folders', () => {
  it('reads a save_to_disk Dataset folder through state.json', async () => {
    const ds = await loadDataset(col('saved'));
    expect(ds.rows).toEqual(FIXTURE_ROWS);
    expect(ds.stats.rowsRead).toBe(5);
    expect(ds.stats.files).toEqual([col('saved/data-00000-of-00001.arrow')]);
  });
  it('picks a DatasetDict split with split@path', async () => {
    expect((await loadDataset(`test@${col('dict')}`)).rows).toEqual(FIXTURE_ROWS.slice(3));
    expect((await loadDataset(col('dict'))).rows).toEqual(FIXTURE_ROWS.slice(0, 3));
    await expect(loadDataset(`validation@${col('dict')}`)).rejects.toThrowError(
      /Split "validation" is not in .*dataset_dict.json lists train, test/,
    );
  });
});
