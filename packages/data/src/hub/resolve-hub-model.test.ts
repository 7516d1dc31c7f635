import { createHash } from 'node:crypto';
import {
  existsSync,
  lstatSync,
  mkdirSync,
  readdirSync,
  readFileSync,
  readlinkSync,
  writeFileSync,
} from 'node:fs';
import { join } from 'node:path';
import { tempDir } from '@rl2/vitest-config/temp-dir';
import { afterAll, beforeAll, describe, expect, it, vi } from 'vitest';
import { startFakeHub } from '../../test/hub-server.js';
import type { DataError } from '../errors.js';
import { type DownloadProgress, downloadProgressLines } from './download-progress.js';
import { resolveHubModel } from './resolve-hub-model.js';

const SHA = 'd'.repeat(40);
const enc = (s: string) => new TextEncoder().encode(s);
const bytes = (n: number, seed: number) =>
  Uint8Array.from({ length: n }, (_, i) => (i * 31 + seed) & 0xff);
const shard1 = bytes(300_000, 1);
const shard2 = bytes(1000, 2);
const FILES = {
  'config.json': enc('{"model_type":"qwen3"}'),
  'generation_config.json': enc('{"eos_token_id":2}'),
  'tokenizer.json': enc('{"model":{}}'),
  'tokenizer_config.json': enc('{}'),
  'model.safetensors.index.json': enc(
    JSON.stringify({
      metadata: { total_size: 301000 },
      weight_map: { a: 'model-00001-of-00002.safetensors', b: 'model-00002-of-00002.safetensors' },
    }),
  ),
  'model-00001-of-00002.safetensors': shard1,
  'model-00002-of-00002.safetensors': shard2,
  'pytorch_model.bin': bytes(5000, 3),
  'README.md': enc('# tiny'),
};

let hub: Awaited<ReturnType<typeof startFakeHub>>;
const down = 'http://127.0.0.1:9'; // discard port: connection refused
const fresh = () => tempDir('rl2-hf-model-');

beforeAll(async () => {
  vi.spyOn(console, 'debug').mockImplementation(() => {}); // @huggingface/hub logs each download
  hub = await startFakeHub({
    'rl2/tiny-model': { token: 'hf_model_token', revisions: { main: { sha: SHA, files: FILES } } },
    'rl2/flaky': {
      revisions: { main: { sha: SHA, files: FILES } },
      cutFirstDownloadAfter: 100_000,
    },
    'rl2/on-cdn': { revisions: { main: { sha: SHA, files: FILES } }, cdn: true },
    'rl2/bin-only': {
      revisions: {
        main: {
          sha: SHA,
          files: { 'config.json': FILES['config.json'], 'pytorch_model.bin': bytes(10, 4) },
        },
      },
    },
  });
});
afterAll(() => hub.close());

describe('resolveHubModel', () => {
  it('downloads config, tokenizer and the shards the index lists into the HF cache, with the token and byte progress', async () => {
    const cacheDir = fresh();
    const events: DownloadProgress[] = [];
    const dir = await resolveHubModel('rl2/tiny-model', {
      endpoint: hub.url,
      token: 'hf_model_token',
      cacheDir,
      onProgress: (p) => events.push(p),
    });
    const repo = join(cacheDir, 'models--rl2--tiny-model');
    expect(dir).toBe(join(repo, 'snapshots', SHA));
    expect(readFileSync(join(repo, 'refs', 'main'), 'utf8')).toBe(SHA);
    for (const f of [
      'config.json',
      'generation_config.json',
      'tokenizer.json',
      'tokenizer_config.json',
      'model.safetensors.index.json',
      'model-00001-of-00002.safetensors',
      'model-00002-of-00002.safetensors',
    ]) {
      expect(lstatSync(join(dir, f)).isSymbolicLink(), f).toBe(true);
      expect(readlinkSync(join(dir, f))).toContain('blobs');
    }
    expect(
      readFileSync(join(dir, 'model-00001-of-00002.safetensors')).equals(Buffer.from(shard1)),
    ).toBe(true);
    expect(existsSync(join(dir, 'pytorch_model.bin'))).toBe(false);
    expect(existsSync(join(dir, 'README.md'))).toBe(false);
    expect(
      hub.log.requests
        .filter((r) => r.url.startsWith('/rl2/tiny-model'))
        .every((r) => r.auth === 'Bearer hf_model_token'),
    ).toBe(true);
    const last = events.filter((e) => e.file === 'model-00001-of-00002.safetensors').at(-1);
    expect(last).toEqual({
      repo: 'rl2/tiny-model',
      file: 'model-00001-of-00002.safetensors',
      loaded: 300_000,
      total: 300_000,
      done: true,
    });
    const lines: string[] = [];
    const show = downloadProgressLines((l) => lines.push(l));
    for (const e of events) show(e);
    expect(
      lines.some((l) =>
        /^downloading rl2\/tiny-model\/model-00001-of-00002\.safetensors: [\d.]+ kB of 300\.0 kB \(\d+%\)$/.test(
          l,
        ),
      ),
    ).toBe(true);
    expect(
      lines.some((l) =>
        /^downloaded rl2\/tiny-model\/model-00001-of-00002\.safetensors \(300\.0 kB in [\d.]+ s, .+\/s\)$/.test(
          l,
        ),
      ),
    ).toBe(true);

    // the same model again: offline, or with the hub down, comes from the cache with no request
    const before = hub.log.requests.length;
    expect(
      await resolveHubModel('rl2/tiny-model', { endpoint: hub.url, cacheDir, offline: true }),
    ).toBe(dir);
    expect(await resolveHubModel('rl2/tiny-model', { endpoint: down, cacheDir })).toBe(dir);
    expect(hub.log.requests.length).toBe(before);
  });

  it('says what is missing: nothing cached with the hub down, weights not cached, no safetensors, no such repo', async () => {
    const cacheDir = fresh();
    const never = (await resolveHubModel('rl2/tiny-model', { endpoint: down, cacheDir }).catch(
      (e) => e,
    )) as DataError;
    expect(never.code).toBe('HUB_UNREACHABLE');
    expect(never.message).toContain(`the hub at ${down} cannot be reached`);
    expect(never.message).toContain(
      `nothing is cached under ${join(cacheDir, 'models--rl2--tiny-model')}`,
    );

    const tokDir = await resolveHubModel('rl2/tiny-model', {
      endpoint: hub.url,
      token: 'hf_model_token',
      cacheDir,
      tokenizerOnly: true,
    });
    expect(existsSync(join(tokDir, 'tokenizer.json'))).toBe(true);
    expect(existsSync(join(tokDir, 'model-00001-of-00002.safetensors'))).toBe(false);
    const partial = (await resolveHubModel('rl2/tiny-model', { cacheDir, offline: true }).catch(
      (e) => e,
    )) as DataError;
    expect(partial.message).toMatch(
      /offline mode is on \(HF_HUB_OFFLINE\), and its cached snapshot .* lacks config\.json/,
    );

    const bin = (await resolveHubModel('rl2/bin-only', { endpoint: hub.url, cacheDir }).catch(
      (e) => e,
    )) as DataError;
    expect(bin.code).toBe('HUB_NOT_FOUND');
    expect(bin.message).toContain(
      'has no model.safetensors or model.safetensors.index.json; rl2 reads safetensors weights only',
    );
    const missing = (await resolveHubModel('rl2/nope', { endpoint: hub.url, cacheDir }).catch(
      (e) => e,
    )) as DataError;
    expect(missing.message).toContain('Model "rl2/nope" was not found');
  });

  it('a misspelt id (401 RepoNotFound, as the hub answers anonymous requests) is "not found", not a token problem; a real 401 still names HF_TOKEN', async () => {
    const cacheDir = fresh();
    const typo = (await resolveHubModel('rl2/tiny-modle', { endpoint: hub.url, cacheDir }).catch(
      (e) => e,
    )) as DataError;
    expect(typo.code).toBe('HUB_NOT_FOUND');
    expect(typo.message).toContain(`Model "rl2/tiny-modle" was not found on ${hub.url} (HTTP 401)`);
    expect(typo.message).toContain('Check the id (owner/name)');
    expect(typo.message).not.toContain('refused access');
    const gated = (await resolveHubModel('rl2/tiny-model', { endpoint: hub.url, cacheDir }).catch(
      (e) => e,
    )) as DataError;
    expect(gated.message).toContain('refused access to model "rl2/tiny-model" (HTTP 401)');
    expect(gated.message).toContain('Set HF_TOKEN');
  });

  it('files served through a CDN redirect (as LFS files are) show their progress, and the hub library prints nothing', async () => {
    const debug = vi.mocked(console.debug).mock.calls.length;
    const events: DownloadProgress[] = [];
    const dir = await resolveHubModel('rl2/on-cdn', {
      endpoint: hub.url,
      cacheDir: fresh(),
      onProgress: (p) => events.push(p),
    });
    expect(hub.log.requests.some((r) => r.url.startsWith('/cdn-lfs/rl2/on-cdn/'))).toBe(true);
    expect(
      readFileSync(join(dir, 'model-00001-of-00002.safetensors')).equals(Buffer.from(shard1)),
    ).toBe(true);
    expect(events.filter((e) => e.file === 'model-00001-of-00002.safetensors').at(-1)).toEqual({
      repo: 'rl2/on-cdn',
      file: 'model-00001-of-00002.safetensors',
      loaded: 300_000,
      total: 300_000,
      done: true,
    });
    expect(vi.mocked(console.debug).mock.calls.length).toBe(debug);
  });

  it('an interrupted download says so and resumes from the bytes it has (Range), leaving no partial file', async () => {
    const cacheDir = fresh();
    const first = (await resolveHubModel('rl2/flaky', { endpoint: hub.url, cacheDir }).catch(
      (e) => e,
    )) as DataError;
    expect(first.code).toBe('HUB_UNREACHABLE');
    expect(first.message).toContain(
      'Downloading model-00001-of-00002.safetensors of model "rl2/flaky"',
    );
    expect(first.message).toContain('Run again to resume');
    expect(first.message).not.toContain('Check HF_TOKEN');
    // what the broken connection left depends on what reached the disk before the cut (it may
    // be nothing yet): whatever is there is a prefix of the file; then set a known prefix, as a
    // killed earlier run leaves it
    const blobs = join(cacheDir, 'models--rl2--flaky', 'blobs');
    const etag = createHash('sha1').update(shard1).digest('hex');
    const partial = join(blobs, `${etag}.incomplete`);
    if (existsSync(partial)) {
      const got = new Uint8Array(readFileSync(partial));
      expect(got).toEqual(shard1.subarray(0, got.length));
    }
    const kept = 123_456;
    mkdirSync(blobs, { recursive: true });
    writeFileSync(partial, shard1.subarray(0, kept));

    const seen = hub.log.requests.length;
    const dir = await resolveHubModel('rl2/flaky', { endpoint: hub.url, cacheDir });
    const shard = hub.log.requests
      .slice(seen)
      .filter((r) => r.url.endsWith('/model-00001-of-00002.safetensors'));
    expect(shard.map((r) => r.range)).toEqual([`bytes=${kept}-`]);
    expect(new Uint8Array(readFileSync(join(dir, 'model-00001-of-00002.safetensors')))).toEqual(
      shard1,
    );
    expect(readdirSync(blobs).filter((f) => f.endsWith('.incomplete'))).toEqual([]);
  });
});
