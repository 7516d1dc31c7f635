import type { IncomingMessage, ServerResponse } from 'node:http';

/** Shape details of an error answer: OpenAI's `type`/`param`/`code`, or a whole body to send as is. */
export interface HttpErrorDetail {
  /** OpenAI error type, e.g. 'invalid_request_error' (default from the status). */
  type?: string;
  /** The request field at fault (OpenAI `param`). */
  param?: string | null;
  /** OpenAI error code, e.g. 'invalid_api_key'. */
  code?: string | null;
  /** Send this body instead of the API's error shape (SGLang's exact 401 and weight-load answers). */
  body?: unknown;
}

/** A client-visible failure: status, message and, for the OpenAI API, its error fields. */
export class HttpError extends Error {
  constructor(
    readonly status: number,
    message: string,
    readonly detail: HttpErrorDetail = {},
  ) {
    super(message);
  }
}

/** A 400 answer naming the field at fault (OpenAI `param`). */
export function badRequest(message: string, param?: string): HttpError {
  return new HttpError(400, message, param === undefined ? {} : { param });
}

/** Sends `body` as JSON with `status`. */
export function sendJson(res: ServerResponse, status: number, body: unknown): void {
  const text = JSON.stringify(body);
  res.writeHead(status, {
    'content-type': 'application/json',
    'content-length': Buffer.byteLength(text),
  });
  res.end(text);
}

/** Sends plain text (SGLang's /flush_cache answers this way). */
export function sendText(res: ServerResponse, status: number, text: string): void {
  res.writeHead(status, {
    'content-type': 'text/plain; charset=utf-8',
    'content-length': Buffer.byteLength(text),
  });
  res.end(text);
}

/** Sends a status with no body (SGLang's /health). */
export function sendEmpty(res: ServerResponse, status: number): void {
  res.writeHead(status, { 'content-length': 0 });
  res.end();
}

/** Starts a server-sent event stream (`data: ...` events, blank-line separated). */
export function startEvents(res: ServerResponse): void {
  res.writeHead(200, {
    'content-type': 'text/event-stream',
    'cache-control': 'no-cache',
    connection: 'keep-alive',
  });
}

/** Writes one `data:` event: a JSON object, or the literal `[DONE]`. */
export function sendEvent(res: ServerResponse, data: unknown): void {
  if (res.destroyed || res.writableEnded) return;
  res.write(`data: ${data === '[DONE]' ? data : JSON.stringify(data)}\n\n`);
}

/**
 * Reads a JSON request body: undefined when empty, 413 past `maxBytes`, 400 when it is not
 * JSON or not a JSON object.
 */
export async function readJson(
  req: IncomingMessage,
  maxBytes: number,
): Promise<Record<string, unknown> | undefined> {
  const declared = Number(req.headers['content-length'] ?? 0);
  if (declared > maxBytes) {
    req.resume();
    throw new HttpError(
      413,
      `request body of ${declared} bytes exceeds the limit of ${maxBytes} bytes (raise --max-body-bytes)`,
    );
  }
  const chunks: Buffer[] = [];
  let size = 0;
  for await (const chunk of req) {
    size += (chunk as Buffer).length;
    if (size > maxBytes)
      throw new HttpError(
        413,
        `request body exceeds the limit of ${maxBytes} bytes (raise --max-body-bytes)`,
      );
    chunks.push(chunk as Buffer);
  }
  if (size === 0) return undefined;
  let parsed: unknown;
  try {
    parsed = JSON.parse(Buffer.concat(chunks).toString('utf8'));
  } catch (e) {
    throw badRequest(`request body is not valid JSON: ${(e as Error).message}`);
  }
  if (parsed === null || typeof parsed !== 'object' || Array.isArray(parsed)) {
    throw badRequest(
      `request body must be a JSON object, got ${Array.isArray(parsed) ? 'an array' : JSON.stringify(parsed)}`,
    );
  }
  return parsed as Record<string, unknown>;
}

/** True for 127.0.0.0/8 and ::1 peers (IPv4-mapped included). */
export function isLoopback(req: IncomingMessage): boolean {
  const a = req.socket.remoteAddress ?? '';
  return a === '::1' || a.startsWith('127.') || a.startsWith('::ffff:127.');
}
