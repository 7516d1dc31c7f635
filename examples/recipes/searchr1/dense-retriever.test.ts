import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { loadEncoder } from './dense-retriever.js';
import { type SearchService, readCorpus, startSearchService } from './search-service.js';

/**
 * Dense retrieval through @huggingface/transformers (onnxruntime) against torch: a one-layer
 * BERT in e5's ONNX layout, made by fixtures/make-tiny-e5.py, which also wrote torch's pooled
 * embeddings, scores and rankings (tiny-e5-expected.json).
 */
const fixtures = join(import.meta.dirname, 'fixtures');
const modelPath = join(fixtures, 'tiny-e5');
const corpusPath = join(import.meta.dirname, 'data', 'corpus.jsonl');
interface Expected {
  passages: { text: string; embedding: number[] }[];
  queries: { query: string; embedding: number[]; ranking: number[]; scores: number[] }[];
}
const expected = JSON.parse(
  readFileSync(join(fixtures, 'tiny-e5-expected.json'), 'utf8'),
) as Expected;

const maxDiff = (a: ArrayLike<number>, b: number[]) =>
  Math.max(...b.map((v, i) => Math.abs((a[i] as number) - v)));

describe('the e5 encoder', () => {
  it("gives torch's mean-pooled, normalised embeddings within 1e-5", async () => {
    const embed = await loadEncoder(modelPath);
    const texts = [
      ...expected.passages.map((p) => p.text),
      ...expected.queries.map((q) => `query: ${q.query}`),
    ];
    const got = await embed(texts);
    const want = [...expected.passages, ...expected.queries].map((e) => e.embedding);
    expect(got).toHaveLength(want.length);
    for (const [i, row] of got.entries())
      expect(maxDiff(row, want[i] as number[])).toBeLessThan(1e-5);
  });

  it('names the missing files and the flag when the folder is not a model', async () => {
    await expect(loadEncoder(fixtures)).rejects.toThrow(
      /--model_path .*fixtures: no config\.json, tokenizer\.json/,
    );
  });
});

describe('the search service with --retriever dense', () => {
  let service: SearchService;
  beforeAll(async () => {
    service = await startSearchService({
      corpusPath,
      retriever: 'dense',
      dense: { modelPath },
      topK: 3,
      port: 0,
    });
  });
  afterAll(() => service.close());

  it("returns torch's top-k passages in torch's order, with its scores", async () => {
    const ids = readCorpus(corpusPath).map((p) => p.id);
    for (const q of expected.queries) {
      const res = await fetch(`${service.url}/search`, {
        method: 'POST',
        headers: { 'content-type': 'application/json' },
        body: JSON.stringify({ query: q.query, top_k: 4 }),
      });
      const body = (await res.json()) as {
        passage: string;
        passages: { id: string; score: number }[];
      };
      expect(body.passages.map((p) => p.id)).toEqual(q.ranking.slice(0, 4).map((i) => ids[i]));
      const scores = body.passages.map((p) => p.score);
      expect(
        maxDiff(
          scores,
          q.ranking.slice(0, 4).map((i) => q.scores[i] as number),
        ),
      ).toBeLessThan(1e-5);
      expect(body.passage.split('\n')).toHaveLength(4);
    }
  });

  it('refuses dense without a model path, naming the flag', async () => {
    await expect(startSearchService({ corpusPath, retriever: 'dense', port: 0 })).rejects.toThrow(
      /--retriever dense needs --model_path/,
    );
  });
});
