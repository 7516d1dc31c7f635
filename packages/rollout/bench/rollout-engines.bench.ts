// pnpm bench rollout-engines: cost of the SGLang HTTP path against the in-process engine,
// the same generator behind both: first the weight-free toy generator (pure HTTP + JSON +
// balancing overhead), then the @rl2/models KV-cache generator on a small random Qwen3.
import '@tensorflow/tfjs-backend-cpu';
import { createGenerator, initRandomModel } from '@rl2/models';
import { setBackend } from '@tensorflow/tfjs-core';
import {
  createEmbeddedEngine,
  createSGLangEngine,
  createToyGenerator,
  startSGLangServer,
} from '../src/index.js';
import type { RolloutEngine, TokenGenerator } from '../src/index.js';

let requests = 256;
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
        const out = await engine.generate({
          inputIds: [i % 32, 1, 2, 3, 4, 5, 6, 7],
          sampling: { max_new_tokens: newTokens, sampling_seed: i, ignore_eos: true },
        });
        tokens += out.tokenIds.length;
      }
    }),
  );
  return { seconds: (performance.now() - start) / 1000, tokens };
}

async function table(title: string, make: () => TokenGenerator): Promise<void> {
  const embedded = createEmbeddedEngine({ generator: make() });
  const s1 = await startSGLangServer(createEmbeddedEngine({ generator: make() }), { port: 0 });
  const s2 = await startSGLangServer(createEmbeddedEngine({ generator: make() }), { port: 0 });
  const cases: [string, RolloutEngine][] = [
    ['embedded (reference)', embedded],
    ['sglang client -> 1 server', createSGLangEngine({ urls: s1.url })],
    ['sglang client -> 2 servers, round-robin', createSGLangEngine({ urls: [s1.url, s2.url] })],
    [
      'sglang client -> 2 servers, least-loaded',
      createSGLangEngine({ urls: [s1.url, s2.url], balance: 'least-loaded' }),
    ],
  ];
  await measure(embedded); // warm-up
  const rows: { case: string; 'req/s': string; 'tokens/s': string; 'vs embedded': string }[] = [];
  let reference = 0;
  for (const [name, engine] of cases) {
    const { seconds, tokens } = await measure(engine);
    const tps = tokens / seconds;
    if (reference === 0) reference = tps;
    rows.push({
      case: name,
      'req/s': (requests / seconds).toFixed(1),
      'tokens/s': tps.toFixed(0),
      'vs embedded': `${(tps / reference).toFixed(2)}x`,
    });
  }
  console.log(
    `${title}: ${requests} requests x ${newTokens} tokens, ${concurrency} in flight (one process, ${process.version})`,
  );
  console.table(rows);
  await Promise.all([s1.close(), s2.close()]);
}

await table('toy generator', () => createToyGenerator({ yieldEvery: 8 }));
await setBackend('cpu');
const model = initRandomModel(
  {
    family: 'qwen3',
    vocabSize: 512,
    hiddenSize: 64,
    intermediateSize: 128,
    numLayers: 2,
    numHeads: 4,
    numKvHeads: 2,
  },
  0,
);
requests = 64;
await table('@rl2/models generator, random Qwen3 (2 layers, hidden 64, tfjs cpu backend)', () =>
  createGenerator(model, { maxBatch: 16 }),
);
