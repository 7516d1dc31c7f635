import { join } from 'node:path';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { exactMatch, normaliseAnswer } from './exact-match.js';
import { type SearchService, startSearchService } from './search-service.js';
import { INVALID_ACTION, SEARCH_FAILED, step } from './searchr1-env.js';

const corpusPath = join(import.meta.dirname, 'data', 'corpus.jsonl');

const post = async (url: string, body: unknown) => {
  const res = await fetch(`${url}/search`, {
    method: 'POST',
    headers: { 'content-type': 'application/json' },
    body: JSON.stringify(body),
  });
  return { status: res.status, body: (await res.json()) as Record<string, unknown> };
};

describe('exactMatch', () => {
  it.each([
    ['Paris', 'paris', true],
    ['The Paris.', ['Lyon', 'paris'], true],
    ['  an   Everest!', 'Mount Everest', false],
    ['Mount  Everest', ['Mount Everest', 'Everest'], true],
    ["Shakespeare's", 'Shakespeares', true],
    ['Lyon', ['Paris'], false],
    ['', 'Paris', false],
  ])('%j vs %j -> %s', (pred, gold, want) => {
    expect(exactMatch(pred, gold)).toBe(want);
  });

  it('normalises case, punctuation, articles and spaces as SQuAD does', () => {
    expect(normaliseAnswer('  The  Quick, brown fox (an animal)! ')).toBe('quick brown fox animal');
  });
});

describe('the search service (BM25 over a JSONL corpus)', () => {
  let service: SearchService;
  beforeEach(async () => {
    service = await startSearchService({ corpusPath, topK: 3, port: 0 });
  });
  afterEach(() => service.close());

  it('answers /health and returns the top-k passages, best first, in RL2 text form', async () => {
    const health = await fetch(`${service.url}/health`);
    expect(await health.json()).toEqual({ status: 'ok' });
    const r = await post(service.url, { query: 'capital of France' });
    expect(r.status).toBe(200);
    const passages = r.body.passages as { title: string }[];
    expect(passages).toHaveLength(3);
    expect(passages[0]?.title).toBe('Paris');
    expect(String(r.body.passage)).toMatch(/^Doc 1\(Title: Paris\) Paris is the capital/);
    expect(String(r.body.passage).split('\n')).toHaveLength(3);
    const one = await post(service.url, { query: 'largest planet Jupiter', top_k: 1 });
    expect((one.body.passages as { title: string }[]).map((p) => p.title)).toEqual(['Jupiter']);
  });

  it('rejects a body without a query with HTTP 400', async () => {
    const r = await post(service.url, { q: 'x' });
    expect(r.status).toBe(400);
    expect(String(r.body.error)).toMatch(/needs \{"query"/);
  });
});

describe('the Search-R1 env against a live service', () => {
  let service: SearchService;
  const saved = process.env.RL2_SEARCH_URL;
  beforeEach(async () => {
    service = await startSearchService({ corpusPath, topK: 2, port: 0 });
    process.env.RL2_SEARCH_URL = `${service.url}/search`;
  });
  afterEach(async () => {
    await service.close();
    if (saved === undefined) delete process.env.RL2_SEARCH_URL;
    else process.env.RL2_SEARCH_URL = saved;
  });

  it('a search appends the passages to the same sequence; an answer ends with exact match', async () => {
    const state = 'Q: capital of France?\n';
    const action = '<think>I should look it up</think><search> capital of France </search>';
    const [next, reward, done] = await step(state, action, ['Paris']);
    expect([reward, done]).toEqual([0, false]);
    expect(next?.startsWith(state + action)).toBe(true);
    expect(next).toMatch(
      /\n\n<information>Doc 1\(Title: Paris\)[\s\S]*Doc 2[\s\S]*<\/information>\n\n$/,
    );
    expect(await step(next ?? '', '<answer> The Paris </answer>', ['Paris'])).toEqual([
      null,
      1,
      true,
    ]);
    expect(await step(next ?? '', '<answer>Lyon</answer>', ['Paris'])).toEqual([null, 0, true]);
  });

  it('answers an action with neither tag as RL2 does, and the model tries again', async () => {
    const [next, reward, done] = await step('S', 'I think it is Paris', 'Paris');
    expect([next, reward, done]).toEqual([`SI think it is Paris${INVALID_ACTION}`, 0, false]);
  });

  it('a service that answers without a passage gets RL2 "exceeded" reply, not a failure', async () => {
    process.env.RL2_SEARCH_URL = `${service.url}/nowhere`;
    const [next] = await step('S', '<search>x</search>', 'Paris');
    expect(next).toBe(`S<search>x</search>${SEARCH_FAILED}`);
  });

  it('a service that is down fails the sample with an error naming the URL and the fix', async () => {
    await service.close();
    await expect(step('S', '<search>capital of France</search>', 'Paris')).rejects.toThrow(
      /search service http:\/\/127\.0\.0\.1:\d+\/search cannot be reached \(ECONNREFUSED\): start it .*serve-search\.ts/,
    );
    service = await startSearchService({ corpusPath, port: 0 });
  });
});
