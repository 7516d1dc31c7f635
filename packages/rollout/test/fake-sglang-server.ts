import { createServer } from 'node:http';
import type { AddressInfo } from 'node:net';
import type { SGLangFixture } from './sglang-fixtures.js';

/** One request the fake received. */
export interface FakeCall {
  method: string;
  path: string;
  authorization?: string;
  body: unknown;
}

/** A fake SGLang server answering with fixture responses; tests swap the answers per path. */
export interface FakeSGLang {
  url: string;
  calls: FakeCall[];
  /** Answer `path` with this fixture's response from now on. */
  answer(path: string, fixture: SGLangFixture): void;
  /** Answer the next `times` requests to `path` with `status` (then the fixture again). */
  fail(path: string, status: number, times: number): void;
  close(): Promise<void>;
}

/**
 * Starts a fake SGLang server on a free loopback port that replays fixture responses
 * (status, JSON body, plain text or server-sent events) and records what it was sent. With
 * `apiKey` it answers 401 like SGLang's middleware to requests without the bearer key.
 */
export async function startFakeSGLang(
  answers: Record<string, SGLangFixture>,
  options: { apiKey?: string; unauthorized?: SGLangFixture } = {},
): Promise<FakeSGLang> {
  const routes = new Map(Object.entries(answers));
  const failures = new Map<string, { status: number; left: number }>();
  const calls: FakeCall[] = [];
  const server = createServer(async (req, res) => {
    const chunks: Buffer[] = [];
    for await (const c of req) chunks.push(c as Buffer);
    const raw = Buffer.concat(chunks).toString('utf8');
    const path = new URL(req.url ?? '/', 'http://x').pathname;
    calls.push({
      method: req.method ?? 'GET',
      path,
      authorization: req.headers.authorization,
      body: raw ? JSON.parse(raw) : undefined,
    });
    if (
      options.apiKey &&
      !path.startsWith('/health') &&
      req.headers.authorization !== `Bearer ${options.apiKey}`
    ) {
      const r = options.unauthorized?.response ?? { status: 401, body: { error: 'Unauthorized' } };
      res.writeHead(r.status, { 'content-type': 'application/json' }).end(JSON.stringify(r.body));
      return;
    }
    const failure = failures.get(path);
    if (failure && failure.left > 0) {
      failure.left -= 1;
      res.writeHead(failure.status, { 'content-type': 'text/plain' }).end('busy');
      return;
    }
    const fixture = routes.get(path);
    if (!fixture) {
      res
        .writeHead(404, { 'content-type': 'application/json' })
        .end(JSON.stringify({ detail: 'Not Found' }));
      return;
    }
    const r = fixture.response;
    if (r.events) {
      res.writeHead(r.status, { 'content-type': 'text/event-stream' });
      for (const e of r.events) res.write(`data: ${e === '[DONE]' ? e : JSON.stringify(e)}\n\n`);
      res.end();
    } else if (r.text !== undefined) {
      res.writeHead(r.status, { 'content-type': r.contentType ?? 'text/plain' }).end(r.text);
    } else {
      res.writeHead(r.status, { 'content-type': 'application/json' }).end(JSON.stringify(r.body));
    }
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  return {
    url: `http://127.0.0.1:${(server.address() as AddressInfo).port}`,
    calls,
    answer: (path, fixture) => routes.set(path, fixture),
    fail: (path, status, times) => failures.set(path, { status, left: times }),
    close: () =>
      new Promise<void>((resolve) => {
        server.closeAllConnections();
        server.close(() => resolve());
      }),
  };
}
