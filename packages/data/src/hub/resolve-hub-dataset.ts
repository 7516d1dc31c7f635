import { mkdir, readdir, readFile, writeFile } from 'node:fs/promises';
import { dirname, join, relative } from 'node:path';
import { datasetInfo, downloadFileToCacheDir, listFiles } from '@huggingface/hub';
import { DataError } from '../errors.js';
import { visibleSplits } from '../sources/select-split-files.js';
import type { HubOptions, ResolvedHubOptions } from './hub-options.js';
import { resolveHubOptions } from './hub-options.js';
import { selectHubFiles } from './select-hub-files.js';

const PARQUET_BRANCH = 'refs/convert/parquet';
const REVISIONS = [PARQUET_BRANCH, 'main'] as const;

/**
 * Local paths of the files of `split` of hub dataset `name`, downloading into the standard HF
 * cache (`datasets--owner--name/{blobs,snapshots/<sha>,refs/<revision>}`, the layout Python
 * `huggingface_hub` uses). Tries the `refs/convert/parquet` branch first, then the repo's own
 * data files on main. When the hub cannot be reached (or offline is set) the cache is used;
 * if nothing is cached either, HUB_UNREACHABLE says so.
 */
export async function resolveHubDataset(name: string, split: string, options: HubOptions = {}): Promise<string[]> {
  const opts = resolveHubOptions(options);
  const storage = join(opts.cacheDir, `datasets--${name.split('/').join('--')}`);
  let networkError: unknown;
  if (!opts.offline) {
    try {
      return await resolveOnline(name, split, opts, storage);
    } catch (e) {
      if (!isNetworkError(e)) throw toHubError(e, name, opts);
      networkError = e;
    }
  }
  const cached = await resolveFromCache(storage, split, opts.config);
  if (cached.length > 0) return cached;
  const why = opts.offline ? 'offline mode is on (HF_HUB_OFFLINE)' : `the hub at ${opts.endpoint} cannot be reached (${describe(networkError)})`;
  throw new DataError(
    'HUB_UNREACHABLE',
    `Cannot load dataset "${name}" split "${split}": ${why}, and nothing is cached under ${storage}. Connect to the network (or set HF_ENDPOINT to a reachable mirror), or pass a local file/folder instead.`,
    { cause: networkError },
  );
}

async function resolveOnline(name: string, split: string, opts: ResolvedHubOptions, storage: string): Promise<string[]> {
  const repo = { type: 'dataset' as const, name };
  const creds = { hubUrl: opts.endpoint, ...(opts.token ? { accessToken: opts.token } : {}), ...(opts.fetch ? { fetch: opts.fetch } : {}) };
  const seen: string[] = [];
  for (const revision of REVISIONS) {
    let sha: string;
    try {
      const info = (await datasetInfo({ name, revision, additionalFields: ['sha'], ...creds })) as { sha?: string };
      if (!info.sha) throw new DataError('HUB_NOT_FOUND', `The hub at ${opts.endpoint} gave no commit for ${name}@${revision}.`);
      sha = info.sha;
    } catch (e) {
      if (revision === PARQUET_BRANCH && statusOf(e) === 404) continue;
      throw e;
    }
    const paths: string[] = [];
    for await (const entry of listFiles({ repo, revision: sha, recursive: true, ...creds })) {
      if (entry.type === 'file') paths.push(entry.path);
    }
    seen.push(...paths);
    const chosen = selectHubFiles(paths, split, revision === PARQUET_BRANCH, opts.config);
    if (chosen.length === 0) continue;
    const files: string[] = [];
    for (const path of chosen) {
      files.push(await downloadFileToCacheDir({ repo, path, revision: sha, cacheDir: opts.cacheDir, ...creds }));
    }
    const ref = join(storage, 'refs', revision);
    await mkdir(dirname(ref), { recursive: true });
    await writeFile(ref, sha);
    return files;
  }
  const splits = visibleSplits(seen.map((p) => p.replace(/^[^/]+\/(?=[^/]+\/)/, '')));
  throw new DataError('HUB_NOT_FOUND', `Dataset "${name}" on ${opts.endpoint} has no data files for split "${split}"${splits.length ? ` (splits found: ${splits.join(', ')}; write <split>@${name})` : ''}.`);
}

/** Files of `split` from the newest cached snapshot a ref points at; [] when none. */
async function resolveFromCache(storage: string, split: string, config?: string): Promise<string[]> {
  for (const revision of REVISIONS) {
    let sha: string;
    try {
      sha = (await readFile(join(storage, 'refs', revision), 'utf8')).trim();
    } catch {
      continue;
    }
    const snapshot = join(storage, 'snapshots', sha);
    const paths = (await listTree(snapshot)).map((f) => relative(snapshot, f).split('\\').join('/'));
    const chosen = selectHubFiles(paths, split, revision === PARQUET_BRANCH, config);
    if (chosen.length > 0) return chosen.map((p) => join(snapshot, p));
  }
  return [];
}

async function listTree(dir: string): Promise<string[]> {
  let entries: import('node:fs').Dirent[];
  try {
    entries = await readdir(dir, { withFileTypes: true });
  } catch {
    return [];
  }
  const out: string[] = [];
  for (const e of entries) {
    const full = join(dir, e.name);
    if (e.isDirectory()) out.push(...(await listTree(full)));
    else out.push(full);
  }
  return out;
}

function statusOf(e: unknown): number | undefined {
  return (e as { statusCode?: number } | null)?.statusCode;
}

/** fetch() rejects with a TypeError (cause ECONNREFUSED, ENOTFOUND, ...) when no HTTP answer came back. */
function isNetworkError(e: unknown): boolean {
  if (e instanceof DataError) return false;
  if (statusOf(e) !== undefined) return (statusOf(e) as number) >= 500;
  return /ECONNREFUSED|ENOTFOUND|EAI_AGAIN|ETIMEDOUT|ECONNRESET|EHOSTUNREACH|ENETUNREACH|fetch failed/.test(describe(e));
}

function describe(e: unknown): string {
  if (e === undefined) return 'unknown error';
  const cause = (e as { cause?: { code?: string; message?: string } }).cause;
  return [(e as Error).message ?? String(e), cause?.code ?? cause?.message].filter(Boolean).join(': ');
}

function toHubError(e: unknown, name: string, opts: ResolvedHubOptions): DataError {
  if (e instanceof DataError) return e;
  const status = statusOf(e);
  if (status === 401 || status === 403) {
    return new DataError('HUB_NOT_FOUND', `The hub at ${opts.endpoint} refused access to dataset "${name}" (HTTP ${status}). ${opts.token ? 'The token in HF_TOKEN lacks access: accept the dataset terms on the hub or use another token.' : 'Set HF_TOKEN to a token with access to it.'}`, { cause: e });
  }
  if (status === 404) {
    return new DataError('HUB_NOT_FOUND', `Dataset "${name}" was not found on ${opts.endpoint} (HTTP 404). Check the id (owner/name), or that HF_TOKEN can see it if it is private.`, { cause: e });
  }
  if (status === undefined && e instanceof TypeError) {
    return new DataError('INVALID_ARGUMENT', `Loading dataset "${name}" from ${opts.endpoint} failed: ${describe(e)}. Check HF_TOKEN and HF_ENDPOINT.`, { cause: e });
  }
  return new DataError('HUB_UNREACHABLE', `Loading dataset "${name}" from ${opts.endpoint} failed: ${describe(e)}.`, { cause: e });
}
