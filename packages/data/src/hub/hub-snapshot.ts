import { existsSync } from 'node:fs';
import { mkdir, readdir, readFile, writeFile } from 'node:fs/promises';
import { dirname, join, relative } from 'node:path';
import { datasetInfo, listFiles, modelInfo } from '@huggingface/hub';
import { DataError } from '../errors.js';
import { fetchWithProgress } from './download-progress.js';
import { hubError, isNetworkError, statusOf, whyNotOnline } from './hub-errors.js';
import type { ResolvedHubOptions } from './hub-options.js';
import { downloadResumable } from './resumable-download.js';

/** Kinds of hub repos read here. */
export type HubRepoType = 'model' | 'dataset';

/** `<cache>/models--owner--name` (or `datasets--...`): a repo's folder in the standard HF cache. */
export function repoCacheDir(cacheDir: string, type: HubRepoType, name: string): string {
  return join(cacheDir, `${type}s--${name.split('/').join('--')}`);
}

/** `name` of a `type` repo in messages: `model "Qwen/Qwen3-0.6B"`. */
export const repoLabel = (type: HubRepoType, name: string) => `${type} "${name}"`;

/**
 * One commit of a hub repo in the standard Hugging Face cache (`<type>s--owner--name/` with
 * `blobs/`, `snapshots/<sha>/` of links and `refs/<revision>`, the layout Python
 * `huggingface_hub` uses and reuses). Opened online, it knows the repo's files at that commit
 * and downloads them on demand (with progress); opened from the cache (offline, or the hub
 * cannot be reached), it holds what an earlier download left.
 */
export class HubSnapshot {
  private constructor(
    readonly name: string,
    readonly type: HubRepoType,
    readonly sha: string,
    /** `snapshots/<sha>`: the local folder the files appear in. */
    readonly dir: string,
    private readonly listing: string[],
    private readonly opts: ResolvedHubOptions,
    /** Why it was opened from the cache (offline mode, the hub unreachable); undefined when online. */
    readonly offlineReason: string | undefined,
  ) {}

  /**
   * The snapshot `revision` points at: asked of the hub unless offline; when the hub cannot be
   * answered (network error, 5xx) or offline, the cached one (`refs/<revision>`). Resolves to
   * undefined when the hub says the revision does not exist and `missingOk`, and to
   * `{ unreachable }` when neither the hub nor the cache has it.
   */
  static async open(
    name: string,
    type: HubRepoType,
    revision: string,
    opts: ResolvedHubOptions,
    options: { missingOk?: boolean } = {},
  ): Promise<HubSnapshot | { unreachable: string } | undefined> {
    let networkError: unknown;
    if (!opts.offline) {
      try {
        return await HubSnapshot.online(name, type, revision, opts);
      } catch (e) {
        if (options.missingOk && statusOf(e) === 404) return undefined;
        if (!isNetworkError(e)) throw hubError(e, repoLabel(type, name), opts);
        networkError = e;
      }
    }
    const why = whyNotOnline(opts, networkError);
    return (await HubSnapshot.cached(name, type, revision, opts, why)) ?? { unreachable: why };
  }

  private static async online(
    name: string,
    type: HubRepoType,
    revision: string,
    opts: ResolvedHubOptions,
  ): Promise<HubSnapshot> {
    const creds = credentials(opts, name);
    const params = { name, revision, additionalFields: ['sha' as const], ...creds };
    const info = (type === 'model' ? await modelInfo(params) : await datasetInfo(params)) as {
      sha?: string;
    };
    if (!info.sha)
      throw new DataError(
        'HUB_NOT_FOUND',
        `The hub at ${opts.endpoint} gave no commit for ${name}@${revision}.`,
      );
    const listing: string[] = [];
    for await (const entry of listFiles({
      repo: { type, name },
      revision: info.sha,
      recursive: true,
      ...creds,
    })) {
      if (entry.type === 'file') listing.push(entry.path);
    }
    const storage = repoCacheDir(opts.cacheDir, type, name);
    const ref = join(storage, 'refs', revision);
    await mkdir(dirname(ref), { recursive: true });
    await writeFile(ref, info.sha);
    return new HubSnapshot(
      name,
      type,
      info.sha,
      join(storage, 'snapshots', info.sha),
      listing,
      opts,
      undefined,
    );
  }

  private static async cached(
    name: string,
    type: HubRepoType,
    revision: string,
    opts: ResolvedHubOptions,
    why: string,
  ): Promise<HubSnapshot | undefined> {
    const storage = repoCacheDir(opts.cacheDir, type, name);
    let sha: string;
    try {
      sha = (await readFile(join(storage, 'refs', revision), 'utf8')).trim();
    } catch {
      return undefined;
    }
    const dir = join(storage, 'snapshots', sha);
    const listing = (await listTree(dir)).map((f) => relative(dir, f).split('\\').join('/'));
    return listing.length > 0
      ? new HubSnapshot(name, type, sha, dir, listing, opts, why)
      : undefined;
  }

  /** Paths of the repo's files (online) or of those cached (offline). */
  files(): string[] {
    return [...this.listing];
  }

  has(path: string): boolean {
    return this.listing.includes(path);
  }

  /** Local path of `path`: already in the snapshot, or downloaded into the cache now. */
  async download(path: string): Promise<string> {
    const local = join(this.dir, path);
    if (existsSync(local)) return local;
    if (this.offlineReason !== undefined) {
      throw new DataError(
        'HUB_UNREACHABLE',
        `Cannot load ${repoLabel(this.type, this.name)}: ${this.offlineReason}, and its cached ` +
          `snapshot ${this.dir} lacks ${path}. Connect once to download it, or pass a local folder.`,
      );
    }
    try {
      const creds = credentials(this.opts, this.name);
      return await downloadResumable({
        type: this.type,
        name: this.name,
        sha: this.sha,
        path,
        storage: repoCacheDir(this.opts.cacheDir, this.type, this.name),
        endpoint: this.opts.endpoint,
        ...(this.opts.token ? { token: this.opts.token } : {}),
        fetch: creds.fetch ?? fetch,
      });
    } catch (e) {
      throw isNetworkError(e)
        ? new DataError(
            'HUB_UNREACHABLE',
            `Downloading ${path} of ${repoLabel(this.type, this.name)} ` +
              `from ${this.opts.endpoint} failed: ${whyNotOnline(this.opts, e)}. Run again to resume.`,
            { cause: e },
          )
        : hubError(e, `${path} of ${repoLabel(this.type, this.name)}`, this.opts);
    }
  }
}

/** What @huggingface/hub calls need: endpoint, token, fetch (counting download bytes when `onProgress` is set). */
function credentials(opts: ResolvedHubOptions, name: string) {
  const wrapped = opts.onProgress
    ? fetchWithProgress(opts.fetch ?? fetch, name, opts.onProgress)
    : opts.fetch;
  return {
    hubUrl: opts.endpoint,
    ...(opts.token ? { accessToken: opts.token } : {}),
    ...(wrapped ? { fetch: wrapped } : {}),
  };
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
