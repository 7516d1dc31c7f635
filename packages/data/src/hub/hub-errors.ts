import { DataError } from '../errors.js';
import type { ResolvedHubOptions } from './hub-options.js';

/** HTTP status of an @huggingface/hub API error, if it carries one. */
export function statusOf(e: unknown): number | undefined {
  return (e as { statusCode?: number } | null)?.statusCode;
}

/** fetch() rejects with a TypeError (cause ECONNREFUSED, ENOTFOUND, ...) when no HTTP answer came back; 5xx counts as down too. */
export function isNetworkError(e: unknown): boolean {
  if (e instanceof DataError) return false;
  const status = statusOf(e);
  if (status !== undefined) return status >= 500;
  return /ECONNREFUSED|ENOTFOUND|EAI_AGAIN|ETIMEDOUT|ECONNRESET|EHOSTUNREACH|ENETUNREACH|fetch failed/.test(
    describeError(e),
  );
}

/** An error's message and its cause's code, on one line. */
export function describeError(e: unknown): string {
  if (e === undefined) return 'unknown error';
  const cause = (e as { cause?: { code?: string; message?: string } }).cause;
  return [(e as Error).message ?? String(e), cause?.code ?? cause?.message]
    .filter(Boolean)
    .join(': ');
}

/** Why the hub was not used: offline mode, or the network error seen. */
export function whyNotOnline(opts: ResolvedHubOptions, networkError: unknown): string {
  return opts.offline
    ? 'offline mode is on (HF_HUB_OFFLINE)'
    : `the hub at ${opts.endpoint} cannot be reached (${describeError(networkError)})`;
}

/** An error the hub answered with, as a DataError naming `what` (e.g. `dataset "a/b"`) and the fix. */
export function hubError(e: unknown, what: string, opts: ResolvedHubOptions): DataError {
  if (e instanceof DataError) return e;
  const status = statusOf(e);
  if (status === 401 || status === 403) {
    const fix = opts.token
      ? 'The token in HF_TOKEN lacks access: accept the terms on the hub or use another token.'
      : 'Set HF_TOKEN to a token with access to it.';
    return new DataError(
      'HUB_NOT_FOUND',
      `The hub at ${opts.endpoint} refused access to ${what} (HTTP ${status}). ${fix}`,
      { cause: e },
    );
  }
  if (status === 404) {
    return new DataError(
      'HUB_NOT_FOUND',
      `${capitalized(what)} was not found on ${opts.endpoint} (HTTP 404). Check the id ` +
        `(owner/name), or that HF_TOKEN can see it if it is private.`,
      { cause: e },
    );
  }
  if (status === undefined && e instanceof TypeError) {
    return new DataError(
      'INVALID_ARGUMENT',
      `Loading ${what} from ${opts.endpoint} failed: ${describeError(e)}. Check HF_TOKEN and HF_ENDPOINT.`,
      { cause: e },
    );
  }
  return new DataError(
    'HUB_UNREACHABLE',
    `Loading ${what} from ${opts.endpoint} failed: ${describeError(e)}.`,
    { cause: e },
  );
}

const capitalized = (s: string) => s.charAt(0).toUpperCase() + s.slice(1);
