import { readFileSync, readdirSync } from 'node:fs';
import { join, resolve } from 'node:path';

/** One contract fixture from SGLang's source (see fixtures/sglang/README.md). */
export interface SGLangFixture {
  sglang: string;
  about: string;
  source: string[];
  request: { method: 'GET' | 'POST'; path: string; body?: unknown };
  response: {
    status: number;
    contentType?: string;
    body?: unknown;
    text?: string;
    events?: unknown[];
  };
  /** Paths whose values are only checked to exist (types vary, or SGLang's value is unknown). */
  loose?: string[];
}

export const FIXTURE_DIR = resolve(import.meta.dirname, '../fixtures/sglang');

/** Every fixture by name (file name without .json). */
export function loadFixtures(): Record<string, SGLangFixture> {
  const out: Record<string, SGLangFixture> = {};
  for (const f of readdirSync(FIXTURE_DIR).filter((n) => n.endsWith('.json'))) {
    out[f.slice(0, -5)] = JSON.parse(readFileSync(join(FIXTURE_DIR, f), 'utf8')) as SGLangFixture;
  }
  return out;
}

function kind(x: unknown): string {
  if (x === null) return 'null';
  if (Array.isArray(x)) return 'array';
  if (typeof x === 'number') return Number.isInteger(x) ? 'integer' : 'number';
  return typeof x;
}

/**
 * Where `actual` does not have the shape of the fixture's example `expected`: every key of an
 * expected object must be there with the same JSON type (integers where the example has an
 * integer; any number where it has a fraction); array elements are checked against the
 * example's element at the same index (its last one past the end), so [logprob, id, text]
 * triples are checked position by position. Extra keys are allowed. Paths are written
 * `meta_info.output_token_logprobs[]`; those in `loose` are only checked to exist.
 */
export function shapeMismatches(
  expected: unknown,
  actual: unknown,
  loose: readonly string[] = [],
  path = '',
): string[] {
  if (loose.includes(path)) return [];
  const want = kind(expected);
  const got = kind(actual);
  const at = path || '(top)';
  if (want === 'number' ? got !== 'number' && got !== 'integer' : want !== got)
    return [`${at}: expected ${want}, got ${got} (${JSON.stringify(actual)?.slice(0, 80)})`];
  if (want === 'array') {
    const e = expected as unknown[];
    if (e.length === 0) return [];
    return (actual as unknown[]).flatMap((a, i) =>
      shapeMismatches(e[Math.min(i, e.length - 1)], a, loose, `${path}[]`),
    );
  }
  if (want === 'object') {
    const a = actual as Record<string, unknown>;
    return Object.entries(expected as Record<string, unknown>).flatMap(([key, value]) => {
      const sub = path ? `${path}.${key}` : key;
      if (!(key in a)) return [`${sub}: missing`];
      return shapeMismatches(value, a[key], loose, sub);
    });
  }
  return [];
}

/** The `data:` payloads of a server-sent event stream (JSON parsed, `[DONE]` kept as a string). */
export function parseEvents(text: string): unknown[] {
  return text
    .split('\n\n')
    .map((block) => block.trim())
    .filter((block) => block.startsWith('data: '))
    .map((block) => {
      const data = block.slice('data: '.length);
      return data === '[DONE]' ? data : JSON.parse(data);
    });
}
