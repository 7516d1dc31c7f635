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
  // `terminated` / UND_ERR_SOCKET: the connection broke while a body streamed (an interrupted download)
  return /ECONNREFUSED|ENOTFOUND|EAI_AGAIN|ETIMEDOUT|ECONNRESET|EHOSTUNREACH|ENETUNREACH|fetch failed|terminated|UND_ERR_SOCKET/.test(
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
  // the hub answers a repo that does not exist (or that this token cannot see) with 401 and
  // X-Error-Code RepoNotFound, not 404: a misspelt id is not a token problem
  if (status === 404 || (status === 401 && isRepoNotFound(e))) {
    return new DataError(
      'HUB_NOT_FOUND',
      `${capitalized(what)} was not found on ${opts.endpoint} (HTTP ${status}). Check the id ` +
        `(owner/name)${
          opts.token
            ? ', or that the token in HF_TOKEN can see it if it is private'
            : ', or set HF_TOKEN if it is a private repo'
        }.`,
      { cause: e },
    );
  }
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

/** The hub's "Repository not found" (its body; @huggingface/hub keeps no headers). */
function isRepoNotFound(e: unknown): boolean {
  const data = (e as { data?: { error?: unknown } }).data;
  const text = `${typeof data?.error === 'string' ? data.error : ''} ${(e as Error).message ?? ''}`;
  return /repository not found|RepoNotFound/i.test(text);
}

const capitalized = (s: string) => s.charAt(0).toUpperCase() + s.slice(1);
