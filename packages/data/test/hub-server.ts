import { createHash } from 'node:crypto';
import { createServer } from 'node:http';
import type { IncomingMessage, Server } from 'node:http';
import type { AddressInfo } from 'node:net';

/** One fake dataset repo: per revision name, a commit sha and its files. A missing revision answers 404. */
export interface FakeRepo {
  revisions: Record<string, { sha: string; files: Record<string, Uint8Array> }>;
  /** When set, requests without `Authorization: Bearer <token>` get 401. */
  token?: string;
  /** Files are served as the hub serves LFS files: a 302 from /resolve/ to a CDN URL (here /cdn-lfs/...). */
  cdn?: boolean;
  /** The first whole-file GET of a larger file sends this many bytes, then the connection breaks. */
  cutFirstDownloadAfter?: number;
}

/** What the server saw, for assertions. */
export interface HubLog {
  /** `range`: the Range header (a file's body is sent whole when it is absent). */
  requests: { method: string; url: string; auth: string | undefined; range?: string }[];
}

/**
 * A tiny HTTP server on 127.0.0.1 that answers the hub URL layout @huggingface/hub uses for
 * datasets (and the same for model repos, without the datasets/ prefix):
 * /api/datasets/{id}/revision/{rev}, /api/datasets/{id}/tree/{rev}, POST
 * /api/datasets/{id}/paths-info/{rev}, and /datasets/{id}/resolve/{rev}/{path} with Range.
 */
export async function startFakeHub(
  repos: Record<string, FakeRepo>,
): Promise<{ url: string; log: HubLog; close(): Promise<void> }> {
  const log: HubLog = { requests: [] };
  const server: Server = createServer(async (req, res) => {
    const url = new URL(req.url ?? '/', 'http://x');
    log.requests.push({
      method: req.method ?? 'GET',
      url: url.pathname,
      auth: req.headers.authorization,
      ...(req.headers.range ? { range: req.headers.range } : {}),
    });
    const json = (status: number, body: unknown, headers: Record<string, string> = {}) => {
      res.writeHead(status, { 'content-type': 'application/json', ...headers });
      res.end(JSON.stringify(body));
    };
    // the "CDN" a /resolve/ of a cdn repo redirects to: /cdn-lfs/{id}/{rev}/{path}
    const cdn = /^\/cdn-lfs\/([^/]+\/[^/]+)\/([^/]+)\/(.+)$/.exec(url.pathname);
    const m =
      cdn && repos[cdn[1] as string]
        ? ([url.pathname, cdn[1], 'cdn', cdn[2], cdn[3]] as unknown as RegExpExecArray)
        : /^\/(?:api\/)?(?:datasets\/|models\/)?([^/]+\/[^/]+)\/(revision|tree|paths-info|resolve)\/([^/]+)(?:\/(.*))?$/.exec(
            url.pathname,
          );
    if (!m) return json(404, { error: 'Not found' });
    const [, id, kind, revRaw, rest] = m as unknown as [
      string,
      string,
      string,
      string,
      string | undefined,
    ];
    const repo = repos[id];
    // as huggingface.co: 401 to anonymous requests (existence is not disclosed), 404 with a token
    if (!repo)
      return json(
        req.headers.authorization ? 404 : 401,
        { error: 'Repository not found' },
        { 'x-error-code': 'RepoNotFound' },
      );
    if (repo.token && req.headers.authorization !== `Bearer ${repo.token}`)
      return json(401, { error: 'Invalid credentials' });
    const rev = decodeURIComponent(revRaw);
    const found = Object.values(repo.revisions).find((r) => r.sha === rev) ?? repo.revisions[rev];
    if (!found)
      return json(
        404,
        { error: `Revision ${rev} not found` },
        { 'x-error-code': 'RevisionNotFound' },
      );
    const oid = (b: Uint8Array) => createHash('sha1').update(b).digest('hex');
    if (kind === 'revision')
      return json(200, {
        _id: id,
        id,
        sha: found.sha,
        private: false,
        lastModified: '2026-01-01T00:00:00.000Z',
      });
    if (kind === 'tree') {
      return json(
        200,
        Object.entries(found.files).map(([path, b]) => ({
          type: 'file',
          path,
          size: b.length,
          oid: oid(b),
        })),
      );
    }
    if (kind === 'paths-info') {
      const body = JSON.parse(await readBody(req)) as { paths: string[] };
      return json(
        200,
        body.paths
          .filter((p) => found.files[p])
          .map((p) => ({
            type: 'file',
            path: p,
            size: found.files[p]?.length,
            oid: oid(found.files[p] as Uint8Array),
          })),
      );
    }
    const path = rest ?? '';
    if (kind === 'resolve' && repo.cdn) {
      res.writeHead(302, { location: `/cdn-lfs/${id}/${revRaw}/${path}` });
      return res.end();
    }
    const bytes = found.files[path];
    if (!bytes) return json(404, { error: 'Entry not found' }, { 'x-error-code': 'EntryNotFound' });
    const range = /bytes=(\d+)-(\d+)?/.exec(req.headers.range ?? '');
    const headers = {
      etag: `"${oid(bytes)}"`,
      'accept-ranges': 'bytes',
      'content-type': 'application/octet-stream',
    };
    if (range) {
      const start = Number(range[1]);
      const end = Math.min(range[2] ? Number(range[2]) : bytes.length - 1, bytes.length - 1);
      res.writeHead(206, {
        ...headers,
        'content-range': `bytes ${start}-${end}/${bytes.length}`,
        'content-length': String(end - start + 1),
      });
      return res.end(Buffer.from(bytes.subarray(start, end + 1)));
    }
    res.writeHead(200, { ...headers, 'content-length': String(bytes.length) });
    const cut = repo.cutFirstDownloadAfter;
    if (cut !== undefined && bytes.length > cut) {
      repo.cutFirstDownloadAfter = undefined;
      res.write(Buffer.from(bytes.subarray(0, cut)), () => res.socket?.end());
      return;
    }
    res.end(Buffer.from(bytes));
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const { port } = server.address() as AddressInfo;
  return {
    url: `http://127.0.0.1:${port}`,
    log,
    close: () => new Promise<void>((resolve) => server.close(() => resolve())),
  };
}

function readBody(req: IncomingMessage): Promise<string> {
  return new Promise((resolve, reject) => {
    let s = '';
    req.on('data', (c) => {
      s += c;
    });
    req.on('end', () => resolve(s));
    req.on('error', reject);
  });
}
