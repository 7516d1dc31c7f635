import { timingSafeEqual } from 'node:crypto';
import type { IncomingMessage } from 'node:http';
import { HttpError, isLoopback } from './http-io.js';

/** Endpoints that read files from the server's disk: loopback clients only, unless an API key guards the server. */
const DISK_ENDPOINTS = new Set(['/update_weights_from_disk']);

/**
 * Access rules of `rl2 serve`, as SGLang and vLLM have them. With an API key, every path but
 * /health... needs `Authorization: Bearer KEY` (401 otherwise: SGLang's {"error": "Unauthorized"}
 * on the native API, OpenAI's error object under /v1). Without one, endpoints that load files
 * from disk answer loopback clients only (403 for others).
 */
export function checkAccess(req: IncomingMessage, path: string, apiKey: string | undefined): void {
  if (apiKey) {
    if (path.startsWith('/health')) return;
    if (bearerMatches(req.headers.authorization, apiKey)) return;
    const given = req.headers.authorization ? 'a wrong API key' : 'no Authorization header';
    throw new HttpError(
      401,
      `this server needs an API key: send "Authorization: Bearer KEY" (the request had ${given})`,
      {
        type: 'invalid_request_error',
        code: 'invalid_api_key',
        ...(path.startsWith('/v1/') ? {} : { body: { error: 'Unauthorized' } }),
      },
    );
  }
  if (DISK_ENDPOINTS.has(path) && !isLoopback(req)) {
    throw new HttpError(
      403,
      `${path} loads files from this machine's disk and answers loopback clients only; start rl2 ` +
        'serve with --api-key KEY to allow it from other hosts',
    );
  }
}

/** `Authorization: Bearer KEY` with this key; the scheme's name is case-insensitive (RFC 7235, section 2.1). */
function bearerMatches(header: string | undefined, apiKey: string): boolean {
  const token = /^\s*bearer +(.+?)\s*$/i.exec(header ?? '')?.[1];
  if (token === undefined) return false;
  const want = Buffer.from(apiKey);
  const got = Buffer.from(token);
  return got.length === want.length && timingSafeEqual(got, want);
}
