import { existsSync, lstatSync, readFileSync, readlinkSync } from 'node:fs';
import { join } from 'node:path';
import { tempDir } from '@rl2/vitest-config/temp-dir';
import { afterAll, beforeAll, describe, expect, it, vi } from 'vitest';
import { FIXTURE_ROWS } from '../../test/fixture-rows.js';
import { startFakeHub } from '../../test/hub-server.js';
import { DataError } from '../errors.js';
import { loadDataset } from '../sources/load-dataset.js';

const col = (name: string) =>
  readFileSync(join(import.meta.dirname, '../../test/fixtures/columnar', name));
const SHA_PARQUET = 'a'.repeat(40);
const SHA_MAIN = 'b'.repeat(40);
const enc = (s: string) => new TextEncoder().encode(s);

let hub: Awaited<ReturnType<typeof startFakeHub>>;
const cache = tempDir('rl2-hf-cache-');
const saved = { ...process.env };

beforeAll(async () => {
  vi.spyOn(console, 'debug').mockImplementation(() => {}); // @huggingface/hub logs each download
  hub = await startFakeHub({
    'rl2/tiny': {
      token: 'hf_test_token',
      revisions: {
        'refs/convert/parquet': {
          sha: SHA_PARQUET,
          files: {
            'default/train/0000.parquet': col('rows.snappy.parquet'),
            'default/test/0000.parquet': col('rows.zstd.parquet'),
            'other/train/0000.parquet': col('rows.gzip.parquet'),
          },
        },
        main: {
          sha: SHA_MAIN,
          files: { 'README.md': enc('# tiny'), 'data/train.jsonl': enc('{"a":1}\n') },
        },
      },
    },
    'rl2/jsonl-only': {
      revisions: {
        main: {
          sha: SHA_MAIN,
          files: {
            'data/train-00000-of-00001.jsonl': enc('{"q":"x"}\n{"q":"y"}\n'),
            'data/test-00000-of-00001.jsonl': enc('{"q":"z"}\n'),
          },
        },
      },
    },
  });
  process.env.HF_ENDPOINT = hub.url;
  process.env.HF_TOKEN = 'hf_test_token';
  process.env.HF_HUB_CACHE = cache;
  delete process.env.HF_HUB_OFFLINE;
});
afterAll(async () => {
  process.env = saved;
  await hub.close();
});

describe('hub datasets through HF_ENDPOINT', () => {
  it('downloads the parquet-branch split into the HF cache layout, with the token', async () => {
    const ds = await loadDataset('rl2/tiny');
    expect(ds.rows).toEqual(FIXTURE_ROWS);
    const repoDir = join(cache, 'datasets--rl2--tiny');
    const pointer = join(repoDir, 'snapshots', SHA_PARQUET, 'default/train/0000.parquet');
    expect(ds.files).toEqual([pointer]);
    expect(lstatSync(pointer).isSymbolicLink()).toBe(true);
    expect(readlinkSync(pointer)).toContain('blobs');
    expect(readFileSync(join(repoDir, 'refs', 'refs/convert/parquet'), 'utf8')).toBe(SHA_PARQUET);
    expect(hub.log.requests.length).toBeGreaterThan(0);
    expect(hub.log.requests.every((r) => r.auth === 'Bearer hf_test_token')).toBe(true);
  });

  it('reuses the cache with no network request when offline', async () => {
    const before = hub.log.requests.length;
    const ds = await loadDataset('rl2/tiny', { hub: { offline: true } });
    expect(ds.rows).toEqual(FIXTURE_ROWS);
    expect(hub.log.requests.length).toBe(before);
  });

  it('picks split@name and a named config', async () => {
    expect((await loadDataset('test@rl2/tiny')).rows).toEqual(FIXTURE_ROWS);
    const other = await loadDataset('rl2/tiny', { hub: { config: 'other' } });
    expect(other.files[0]).toContain(join('other', 'train', '0000.parquet'));
  });

  it("falls back to the repo's own data files when there is no parquet branch", async () => {
    expect((await loadDataset('rl2/jsonl-only')).rows).toEqual([{ q: 'x' }, { q: 'y' }]);
    expect((await loadDataset('test@rl2/jsonl-only')).rows).toEqual([{ q: 'z' }]);
    await expect(loadDataset('validation@rl2/jsonl-only')).rejects.toThrowError(
      /no data files for split "validation".*splits found: train, test/,
    );
  });

  it('names a missing dataset and a refused token', async () => {
    const missing = (await loadDataset('rl2/nope').catch((e) => e)) as DataError;
    expect(missing.code).toBe('HUB_NOT_FOUND');
    expect(missing.message).toContain('"rl2/nope" was not found');
    const refused = (await loadDataset('rl2/tiny', {
      hub: { token: 'hf_wrong', cacheDir: tempDir('rl2-hf-') },
    }).catch((e) => e)) as DataError;
    expect(refused.code).toBe('HUB_NOT_FOUND');
    expect(refused.message).toContain('HTTP 401');
    const malformed = (await loadDataset('rl2/tiny', { hub: { token: 'not-a-token' } }).catch(
      (e) => e,
    )) as DataError;
    expect(malformed.code).toBe('INVALID_ARGUMENT');
    expect(malformed.message).toContain("Your access token must start with 'hf_'");
    expect(malformed.message).not.toContain('cannot be reached');
  });

  it('uses the cache when the hub is unreachable, and says so when nothing is cached', async () => {
    const down = 'http://127.0.0.1:9'; // discard port: connection refused
    expect((await loadDataset('rl2/tiny', { hub: { endpoint: down } })).rows).toEqual(FIXTURE_ROWS);
    const e = (await loadDataset('rl2/never-downloaded', { hub: { endpoint: down } }).catch(
      (x) => x,
    )) as DataError;
    expect(e).toBeInstanceOf(DataError);
    expect(e.code).toBe('HUB_UNREACHABLE');
    expect(e.message).toContain(`the hub at ${down} cannot be reached`);
    expect(e.message).toContain(
      `nothing is cached under ${join(cache, 'datasets--rl2--never-downloaded')}`,
    );
    expect(existsSync(join(cache, 'datasets--rl2--never-downloaded'))).toBe(false);
  });
});
