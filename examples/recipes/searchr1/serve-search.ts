/**
 * Starts the search service from the command line, as RL2's examples/searchr1.sh starts
 * envs/local_search_service.py:
 *   node --import tsx examples/recipes/searchr1/serve-search.ts --corpus_path CORPUS.jsonl --top_k 3 [--port 10000]
 */
import { parseArgs } from 'node:util';
import { startSearchService } from './search-service.js';

const { values } = parseArgs({
  options: {
    corpus_path: { type: 'string' },
    top_k: { type: 'string', default: '3' },
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
  port: Number(values.port),
  host: values.host,
});
console.log(`search service on ${service.url} (POST /search {query}, GET /health)`);
const stop = () => service.close().then(() => process.exit(0));
process.on('SIGINT', stop);
process.on('SIGTERM', stop);
