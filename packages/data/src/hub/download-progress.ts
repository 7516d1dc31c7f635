/** Bytes of one file received so far (`total` from the response headers when known). */
export interface DownloadProgress {
  /** `owner/name`. */
  readonly repo: string;
  /** Path of the file in the repo. */
  readonly file: string;
  readonly loaded: number;
  readonly total?: number;
  /** The last event of the file. */
  readonly done: boolean;
}

/**
 * Wraps `fetch` so that file downloads (GETs of `.../resolve/<rev>/<path>`, not the 1-byte
 * probes @huggingface/hub sends first) report the bytes of their body as it streams through.
 */
export function fetchWithProgress(
  base: typeof fetch,
  repo: string,
  onProgress: (p: DownloadProgress) => void,
): typeof fetch {
  return async (input, init) => {
    const response = await base(input, init);
    const url = typeof input === 'string' ? input : input instanceof URL ? input.href : input.url;
    const m = /\/resolve\/[^/]+\/(.+?)(\?|$)/.exec(url);
    const range = new Headers(init?.headers).get('range');
    if (!m || range === 'bytes=0-0' || !response.ok || !response.body) return response;
    const file = decodeURIComponent(m[1] as string);
    const total = totalBytes(response.headers);
    let loaded = 0;
    const counted = response.body.pipeThrough(
      new TransformStream<Uint8Array, Uint8Array>({
        transform(chunk, controller) {
          loaded += chunk.byteLength;
          onProgress({
            repo,
            file,
            loaded,
            ...(total !== undefined ? { total } : {}),
            done: false,
          });
          controller.enqueue(chunk);
        },
        flush() {
          onProgress({ repo, file, loaded, ...(total !== undefined ? { total } : {}), done: true });
        },
      }),
    );
    return new Response(counted, {
      status: response.status,
      statusText: response.statusText,
      headers: response.headers,
    });
  };
}

function totalBytes(headers: Headers): number | undefined {
  const range = /\/(\d+)$/.exec(headers.get('content-range') ?? '');
  const n = Number(range ? range[1] : (headers.get('content-length') ?? Number.NaN));
  return Number.isFinite(n) ? n : undefined;
}

const size = (n: number) =>
  n >= 1e9
    ? `${(n / 1e9).toFixed(2)} GB`
    : n >= 1e6
      ? `${(n / 1e6).toFixed(1)} MB`
      : `${(n / 1e3).toFixed(1)} kB`;

/**
 * Turns progress events into lines for `log`: per file, one every `everyMs` at most while it
 * downloads, and one when it is done (size, time, rate).
 */
export function downloadProgressLines(
  log: (line: string) => void,
  everyMs = 2000,
): (p: DownloadProgress) => void {
  const started = new Map<string, number>();
  const shown = new Map<string, number>();
  return (p) => {
    const key = `${p.repo}/${p.file}`;
    const now = Date.now();
    if (!started.has(key)) started.set(key, now);
    if (p.done) {
      const s = Math.max(1e-3, (now - (started.get(key) as number)) / 1000);
      log(`downloaded ${key} (${size(p.loaded)} in ${s.toFixed(1)} s, ${size(p.loaded / s)}/s)`);
      started.delete(key);
      shown.delete(key);
      return;
    }
    if (now - (shown.get(key) ?? 0) < everyMs) return;
    shown.set(key, now);
    log(
      `downloading ${key}: ${size(p.loaded)}${p.total ? ` of ${size(p.total)} (${Math.floor((100 * p.loaded) / p.total)}%)` : ''}`,
    );
  };
}
