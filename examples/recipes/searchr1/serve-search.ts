/**
 * Starts the search service from the command line, as RL2's examples/searchr1.sh starts
 * envs/local_search_service.py:
 *   node --import tsx examples/recipes/searchr1/serve-search.ts --corpus_path CORPUS.jsonl --top_k 3 [--port 10000]
 * BM25 by default; e5 embeddings with `--retriever dense --model_path DIR` (a local ONNX export).
 */
import { parseArgs } from 'node:util';
import { startSearchService } from './search-service.js';

const { values } = parseArgs({
  options: {
    corpus_path: { type: 'string' },
    top_k: { type: 'string', default: '3' },
    retriever: { type: 'string', default: 'bm25' },
    model_path: { type: 'string' },
    port: { type: 'string', default: '10000' },
    host: { type: 'string', default: '127.0.0.1' },
  },
});
if (!values.corpus_path) {
  console.error('serve-search: --corpus_path CORPUS.jsonl is required ({id, contents} rows)');
  process.exit(2);
}
const service = await startSearchService({
  corpusPath: values.corpus_path,
  topK: Number(values.top_k),
  retriever: values.retriever as 'bm25' | 'dense',
  dense: values.model_path ? { modelPath: values.model_path } : undefined,
  port: Number(values.port),
  host: values.host,
});
console.log(`search service on ${service.url} (POST /search {query}, GET /health)`);
const stop = () => service.close().then(() => process.exit(0));
process.on('SIGINT', stop);
process.on('SIGTERM', stop);
