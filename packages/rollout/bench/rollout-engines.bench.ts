// pnpm bench rollout-engines: cost of the SGLang HTTP path against the in-process engine,
// same toy generator behind both, so the difference is HTTP + JSON + balancing overhead.
import { createEmbeddedEngine, createSGLangEngine, createToyGenerator, startSGLangServer } from '../src/index.js';
import type { RolloutEngine } from '../src/index.js';

const requests = 256;
const newTokens = 32;
const concurrency = 32;

async function measure(engine: RolloutEngine): Promise<{ seconds: number; tokens: number }> {
  let next = 0;
  let tokens = 0;
  const start = performance.now();
  await Promise.all(
    Array.from({ length: concurrency }, async () => {
      while (next < requests) {
        const i = next++;
        const out = await engine.generate({ inputIds: [i % 32, 1, 2, 3, 4, 5, 6, 7], sampling: { max_new_tokens: newTokens, sampling_seed: i } });
        tokens += out.tokenIds.length;
      }
    }),
  );
  return { seconds: (performance.now() - start) / 1000, tokens };
}

const make = () => createEmbeddedEngine({ generator: createToyGenerator({ yieldEvery: 8 }) });
const embedded = make();
const s1 = await startSGLangServer(make(), { port: 0 });
const s2 = await startSGLangServer(make(), { port: 0 });
const cases: [string, RolloutEngine][] = [
  ['embedded (reference)', embedded],
  ['sglang client -> 1 server', createSGLangEngine({ urls: s1.url })],
  ['sglang client -> 2 servers, round-robin', createSGLangEngine({ urls: [s1.url, s2.url] })],
  ['sglang client -> 2 servers, least-loaded', createSGLangEngine({ urls: [s1.url, s2.url], balance: 'least-loaded' })],
];
await measure(embedded); // warm-up
const rows: { case: string; 'req/s': string; 'tokens/s': string; 'vs embedded': string }[] = [];
let reference = 0;
for (const [name, engine] of cases) {
  const { seconds, tokens } = await measure(engine);
  const tps = tokens / seconds;
  if (reference === 0) reference = tps;
  rows.push({ case: name, 'req/s': (requests / seconds).toFixed(0), 'tokens/s': tps.toFixed(0), 'vs embedded': `${(tps / reference).toFixed(2)}x` });
}
console.log(`${requests} requests x ${newTokens} tokens, ${concurrency} in flight, toy generator (one process, ${process.version})`);
console.table(rows);
await Promise.all([s1.close(), s2.close()]);
