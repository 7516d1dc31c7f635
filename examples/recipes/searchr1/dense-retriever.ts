import { existsSync } from 'node:fs';
import { basename, dirname, join } from 'node:path';
import type { Passage, Retriever } from './search-service.js';

/** e5-style dense retrieval (Search-R1's default retriever: intfloat/e5-base-v2 + a flat index). */
export interface DenseOptions {
  /** A local folder holding an ONNX export (config.json, tokenizer.json, onnx/model.onnx), e.g. Xenova/e5-base-v2. */
  modelPath: string;
  /** Prefixes e5 was trained with. Defaults 'query: ' and 'passage: '. */
  queryPrefix?: string;
  passagePrefix?: string;
  /** Passages embedded per call while indexing. Default 32. */
  batchSize?: number;
}

type Embed = (texts: string[]) => Promise<Float32Array[]>;

/** Mean pooling over the attention mask and L2 normalisation, as Search-R1's e5 encoder. */
export async function loadEncoder(modelPath: string): Promise<Embed> {
  const missing = ['config.json', 'tokenizer.json', join('onnx', 'model.onnx')].filter(
    (f) => !existsSync(join(modelPath, f)),
  );
  if (missing.length > 0)
    throw new Error(
      `--model_path ${modelPath}: no ${missing.join(', ')}; give a local folder with an ONNX export of an e5 model ` +
        '(e.g. `huggingface-cli download Xenova/e5-base-v2 --local-dir e5`) or use --retriever bm25',
    );
  const { env, pipeline } = await import('@huggingface/transformers');
  env.allowRemoteModels = false;
  env.localModelPath = dirname(modelPath);
  const extract = await pipeline('feature-extraction', basename(modelPath), { dtype: 'fp32' });
  return async (texts) => {
    const out = await extract(texts, { pooling: 'mean', normalize: true });
    const [rows, dim] = out.dims as [number, number];
    const data = out.data as Float32Array;
    return Array.from({ length: rows }, (_, i) => data.slice(i * dim, (i + 1) * dim));
  };
}

/** Embeds every passage once (a flat index in memory), then scores a query by inner product. */
export async function denseRetriever(
  passages: Passage[],
  options: DenseOptions,
): Promise<Retriever> {
  const embed = await loadEncoder(options.modelPath);
  const passagePrefix = options.passagePrefix ?? 'passage: ';
  const queryPrefix = options.queryPrefix ?? 'query: ';
  const batch = options.batchSize ?? 32;
  const index: Float32Array[] = [];
  for (let i = 0; i < passages.length; i += batch) {
    const texts = passages
      .slice(i, i + batch)
      .map((p) => passagePrefix + (p.contents ?? `${p.title}\n${p.text}`));
    index.push(...(await embed(texts)));
  }
  return async (query, k) => {
    const [q] = await embed([`${queryPrefix}${query}`]);
    const scores = index.map((row) => row.reduce((s, v, j) => s + v * (q as Float32Array)[j], 0));
    const order = scores
      .map((_, i) => i)
      .sort((a, b) => (scores[b] as number) - (scores[a] as number));
    return order.slice(0, k).map((i) => {
      const { id, title, text } = passages[i] as Passage;
      return { id, title, text, score: scores[i] as number };
    });
  };
}
