import { readdir, readFile, stat } from 'node:fs/promises';
import { join } from 'node:path';
import { downloadFileToCacheDir, modelInfo } from '@huggingface/hub';
import { DataError } from '../errors.js';
import type { HubOptions } from '../hub/hub-options.js';
import { resolveHubOptions } from '../hub/hub-options.js';
import { createTokenizer } from './create-tokenizer.js';
import type { Tokenizer } from './tokenizer.js';

/**
 * Loads a tokenizer from a folder holding tokenizer.json + tokenizer_config.json (+ optional
 * chat_template.jinja), or, when `pathOrRepo` is not a folder, from a hub model repo (the files
 * go to the HF cache).
 */
export async function loadTokenizer(pathOrRepo: string, hub: HubOptions = {}): Promise<Tokenizer> {
  const isDir = await stat(pathOrRepo).then((s) => s.isDirectory(), () => false);
  const read = isDir ? (name: string) => readFile(join(pathOrRepo, name), 'utf8') : await hubReader(pathOrRepo, hub);
  let tokenizerJson: string;
  try {
    tokenizerJson = await read('tokenizer.json');
  } catch (e) {
    if (e instanceof DataError) throw e;
    throw new DataError('TOKENIZER', `No tokenizer.json in ${pathOrRepo}. Point the tokenizer path at a Hugging Face model folder (tokenizer.json + tokenizer_config.json).`, { cause: e });
  }
  const config = await read('tokenizer_config.json').catch(() => '{}');
  const template = await read('chat_template.jinja').catch(() => undefined);
  try {
    return createTokenizer({
      tokenizerJson: JSON.parse(tokenizerJson),
      tokenizerConfig: JSON.parse(config),
      ...(template !== undefined ? { chatTemplate: template } : {}),
      source: pathOrRepo,
    });
  } catch (e) {
    if (e instanceof DataError) throw e;
    throw new DataError('TOKENIZER', `Cannot build the tokenizer in ${pathOrRepo}: ${(e as Error).message}.`, { cause: e });
  }
}

/**
 * Reads tokenizer files of a hub model repo through the HF cache. When the hub cannot be
 * reached (or offline is set), the newest cached snapshot holding tokenizer.json is used.
 */
async function hubReader(repo: string, hub: HubOptions): Promise<(name: string) => Promise<string>> {
  const opts = resolveHubOptions(hub);
  if (!/^[\w.-]+(\/[\w.-]+)?$/.test(repo)) throw new DataError('TOKENIZER', `Tokenizer path ${repo} is neither a folder nor a hub model id.`);
  const snapshots = join(opts.cacheDir, `models--${repo.split('/').join('--')}`, 'snapshots');
  let cached: string | undefined;
  const fromCache = async (): Promise<string> => {
    cached ??= await newestSnapshotWith(snapshots, 'tokenizer.json');
    if (cached === undefined) {
      throw new DataError('HUB_UNREACHABLE', `Cannot load tokenizer "${repo}": ${opts.offline ? 'offline mode is on (HF_HUB_OFFLINE)' : `the hub at ${opts.endpoint} cannot be reached`} and no snapshot with tokenizer.json is cached under ${snapshots}. Connect, set HF_ENDPOINT, or pass a local folder.`);
    }
    return cached;
  };
  const creds = { hubUrl: opts.endpoint, ...(opts.token ? { accessToken: opts.token } : {}), ...(opts.fetch ? { fetch: opts.fetch } : {}) };
  let sha: string | undefined;
  return async (name) => {
    if (opts.offline || cached !== undefined) return readFile(join(await fromCache(), name), 'utf8');
    try {
      // Pin the commit first so every file lands in one snapshots/<sha>/ folder.
      sha ??= ((await modelInfo({ name: repo, revision: 'main', additionalFields: ['sha'], ...creds })) as { sha?: string }).sha ?? 'main';
      const path = await downloadFileToCacheDir({
        repo: { type: 'model', name: repo },
        path: name,
        revision: sha,
        cacheDir: opts.cacheDir,
        ...creds,
      });
      return readFile(path, 'utf8');
    } catch (e) {
      const why = String((e as { cause?: { code?: string } }).cause?.code ?? (e as Error).message);
      if (!/ECONNREFUSED|ENOTFOUND|EAI_AGAIN|ETIMEDOUT|ECONNRESET|EHOSTUNREACH|fetch failed/.test(why)) throw e;
      return readFile(join(await fromCache(), name), 'utf8');
    }
  };
}

async function newestSnapshotWith(snapshots: string, file: string): Promise<string | undefined> {
  const dirs = await readdir(snapshots).catch(() => [] as string[]);
  let best: { dir: string; mtime: number } | undefined;
  for (const d of dirs) {
    const s = await stat(join(snapshots, d, file)).catch(() => undefined);
    if (s && (!best || s.mtimeMs > best.mtime)) best = { dir: join(snapshots, d), mtime: s.mtimeMs };
  }
  return best?.dir;
}
