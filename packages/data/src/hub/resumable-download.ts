import { createWriteStream, existsSync } from 'node:fs';
import { copyFile, mkdir, rename, rm, stat, symlink } from 'node:fs/promises';
import { dirname, join, relative } from 'node:path';
import { Readable } from 'node:stream';
import { pipeline } from 'node:stream/promises';
import { pathsInfo } from '@huggingface/hub';
import type { HubRepoType } from './hub-snapshot.js';

/** Where one file of one commit goes in the HF cache, and how to ask the hub for it. */
export interface CachedFileRequest {
  readonly type: HubRepoType;
  readonly name: string;
  /** The commit sha. */
  readonly sha: string;
  readonly path: string;
  /** `<cache>/<type>s--owner--name`. */
  readonly storage: string;
  readonly endpoint: string;
  readonly token?: string;
  readonly fetch: typeof fetch;
}

/** An HTTP error of the hub, with the status `hubError` reads. */
function httpError(status: number, url: string, body: string): Error {
  const text = (() => {
    try {
      const j = JSON.parse(body) as { error?: string };
      return j.error ?? body;
    } catch {
      return body;
    }
  })();
  return Object.assign(new Error(`${text || `HTTP ${status}`} (${url})`), { statusCode: status });
}

/**
 * Downloads `path` of commit `sha` into the HF cache layout (`blobs/<etag>`, linked from
 * `snapshots/<sha>/<path>`), as @huggingface/hub's downloadFileToCacheDir does, but an
 * interrupted download resumes: the bytes in `blobs/<etag>.incomplete` are kept and the rest is
 * asked for with a Range request (Python huggingface_hub does the same), instead of starting at
 * byte 0 again. Returns the snapshot path.
 */
export async function downloadResumable(req: CachedFileRequest): Promise<string> {
  const auth: Record<string, string> = req.token ? { authorization: `Bearer ${req.token}` } : {};
  const pointer = join(req.storage, 'snapshots', req.sha, req.path);
  if (existsSync(pointer)) return pointer;
  const [info] = await pathsInfo({
    repo: { type: req.type, name: req.name },
    paths: [req.path],
    revision: req.sha,
    hubUrl: req.endpoint,
    fetch: req.fetch,
    ...(req.token ? { accessToken: req.token } : {}),
  });
  const etag = info?.lfs?.oid ?? info?.xetHash ?? info?.oid;
  if (!etag) throw httpError(404, req.path, `Entry not found: ${req.path}`);
  const blob = join(req.storage, 'blobs', etag);
  await mkdir(dirname(blob), { recursive: true });
  await mkdir(dirname(pointer), { recursive: true });
  if (!existsSync(blob)) await fetchBlob(req, blob, auth);
  await linkBlob(blob, pointer);
  return pointer;
}

async function fetchBlob(req: CachedFileRequest, blob: string, auth: Record<string, string>) {
  const incomplete = `${blob}.incomplete`;
  const have = existsSync(incomplete) ? (await stat(incomplete)).size : 0;
  const prefix = req.type === 'model' ? '' : `${req.type}s/`;
  const file = req.path.split('/').map(encodeURIComponent).join('/');
  const url = `${req.endpoint}/${prefix}${req.name}/resolve/${req.sha}/${file}`;
  const res = await req.fetch(url, {
    headers: { ...auth, ...(have > 0 ? { range: `bytes=${have}-` } : {}) },
  });
  if (res.status === 416 && have > 0) {
    // the range starts at the end: the earlier download had every byte
    await rename(incomplete, blob);
    return;
  }
  if (!res.ok || !res.body) throw httpError(res.status, url, await res.text());
  // 206: the rest of the file; 200: the server ignored the range, so start over
  const flags = res.status === 206 ? 'a' : 'w';
  await pipeline(Readable.fromWeb(res.body as never), createWriteStream(incomplete, { flags }));
  await rename(incomplete, blob);
}

async function linkBlob(blob: string, pointer: string) {
  await rm(pointer, { force: true });
  try {
    await symlink(relative(dirname(pointer), blob), pointer);
  } catch {
    await copyFile(blob, pointer); // no symlinks here (some Windows setups)
  }
}
