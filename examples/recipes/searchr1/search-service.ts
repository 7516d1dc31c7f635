import { readFileSync } from 'node:fs';
import { type IncomingMessage, type ServerResponse, createServer } from 'node:http';
import type { AddressInfo } from 'node:net';
import MiniSearch from 'minisearch';
import { type DenseOptions, denseRetriever } from './dense-retriever.js';

/** One passage of the corpus: Search-R1's wiki JSONL rows {id, contents: "Title\ntext"}. */
export interface Passage {
  id: string;
  title: string;
  text: string;
  /** The row's contents as given (what a dense retriever embeds, as Search-R1's index does). */
  contents?: string;
}

/** A passage found for a query, with its score (BM25, or the inner product of e5 embeddings). */
export type Hit = Passage & { score: number };

/** Top-k passages for a query, best first. */
export type Retriever = (query: string, k: number) => Promise<Hit[]>;

export interface SearchServiceOptions {
  /** JSONL corpus, one {id, contents} row a line (contents: title, newline, text). */
  corpusPath: string;
  /** 'bm25' (default: no model needed) or 'dense' (e5 embeddings; needs `dense.modelPath`). */
  retriever?: 'bm25' | 'dense';
  dense?: DenseOptions;
  /** Passages per query (RL2's --top_k). Default 3. */
  topK?: number;
  /** Default 127.0.0.1 (loopback only). */
  host?: string;
  /** Default 10000 (the port RL2's envs/searchr1.py posts to); 0 picks a free one. */
  port?: number;
}

export interface SearchService {
  /** Base URL, e.g. http://127.0.0.1:10000; the env posts to `${url}/search`. */
  url: string;
  close(): Promise<void>;
}

/** Reads the corpus JSONL; a row that does not parse names its line. */
export function readCorpus(path: string): Passage[] {
  const lines = readFileSync(path, 'utf8').split('\n');
  return lines.flatMap((line, i) => {
    if (!line.trim()) return [];
    let row: { id?: unknown; contents?: unknown };
    try {
      row = JSON.parse(line);
    } catch (e) {
      throw new Error(`${path}:${i + 1}: not JSON (${(e as Error).message})`);
    }
    if (typeof row.contents !== 'string')
      throw new Error(`${path}:${i + 1}: a passage needs "contents" (title, newline, text)`);
    const [title = '', ...rest] = row.contents.split('\n');
    const passage = {
      id: String(row.id ?? i),
      title: title.replace(/^"|"$/g, ''),
      text: rest.join('\n'),
    };
    return [{ ...passage, contents: row.contents }];
  });
}

/** A BM25 index (MiniSearch's BM25+, https://lucaong.github.io/minisearch/) over title and text. */
export function indexCorpus(passages: Passage[]): MiniSearch<Passage> {
  const index = new MiniSearch<Passage>({
    fields: ['title', 'text'],
    storeFields: ['title', 'text'],
  });
  index.addAll(passages);
  return index;
}

/** BM25 (fuzzy 0.1, any term) over title and text. */
export function bm25Retriever(passages: Passage[]): Retriever {
  const index = indexCorpus(passages);
  return async (query, k) =>
    index
      .search(query, { fuzzy: 0.1, combineWith: 'OR' })
      .slice(0, k)
      .map((h) => ({
        id: String(h.id),
        title: String(h.title),
        text: String(h.text),
        score: h.score,
      }));
}

/** The retriever the options name; 'dense' without a model path is an error naming the flag. */
export async function openRetriever(options: SearchServiceOptions): Promise<Retriever> {
  const passages = readCorpus(options.corpusPath);
  const kind = options.retriever ?? 'bm25';
  if (kind === 'bm25') return bm25Retriever(passages);
  if (kind !== 'dense') throw new Error(`--retriever ${kind}: use bm25 or dense`);
  if (!options.dense?.modelPath)
    throw new Error('--retriever dense needs --model_path DIR (an ONNX export of an e5 model)');
  return denseRetriever(passages, options.dense);
}

/** RL2's passage text: `Doc 1(Title: T) text` per hit, one a line. */
export function formatPassages(hits: { title: string; text: string }[]): string {
  return hits.map((h, i) => `Doc ${i + 1}(Title: ${h.title}) ${h.text}`).join('\n');
}

/**
 * RL2's envs/local_search_service.py over a local corpus, with BM25 (default) or e5 embeddings:
 * GET /health -> {status: "ok"}; POST /search {query, top_k?} -> {passage, passages} where
 * passage is RL2's text (`Doc 1(Title: ...) ...`, what the env shows the model) and passages
 * the hits with their scores. A body without a string query is HTTP 400.
 */
export async function startSearchService(options: SearchServiceOptions): Promise<SearchService> {
  const retrieve = await openRetriever(options);
  const topK = options.topK ?? 3;
  const server = createServer((req, res) => {
    handle(req, res, retrieve, topK).catch((e: Error) => send(res, 500, { error: e.message }));
  });
  await new Promise<void>((ok, fail) => {
    server.once('error', fail);
    server.listen(options.port ?? 10000, options.host ?? '127.0.0.1', () => ok());
  });
  const { address, port } = server.address() as AddressInfo;
  return {
    url: `http://${address}:${port}`,
    close: () =>
      new Promise<void>((ok) => {
        server.closeAllConnections();
        server.close(() => ok());
      }),
  };
}

async function handle(
  req: IncomingMessage,
  res: ServerResponse,
  retrieve: Retriever,
  topK: number,
): Promise<void> {
  if (req.method === 'GET' && req.url === '/health') return send(res, 200, { status: 'ok' });
  if (req.method !== 'POST' || req.url !== '/search')
    return send(res, 404, { error: 'GET /health or POST /search {query}' });
  let body: { query?: unknown; top_k?: unknown };
  try {
    body = JSON.parse(await readBody(req));
  } catch {
    return send(res, 400, { error: 'the body must be JSON: {"query": "..."}' });
  }
  if (typeof body.query !== 'string')
    return send(res, 400, { error: 'POST /search needs {"query": "..."}' });
  const k = typeof body.top_k === 'number' && body.top_k > 0 ? Math.floor(body.top_k) : topK;
  const passages = await retrieve(body.query, k);
  send(res, 200, { passage: formatPassages(passages), passages });
}

function readBody(req: IncomingMessage): Promise<string> {
  return new Promise((ok, fail) => {
    const chunks: Buffer[] = [];
    req.on('data', (c: Buffer) => chunks.push(c));
    req.on('end', () => ok(Buffer.concat(chunks).toString('utf8')));
    req.on('error', fail);
  });
}

function send(res: ServerResponse, status: number, body: unknown): void {
  res.writeHead(status, { 'content-type': 'application/json' });
  res.end(JSON.stringify(body));
}
