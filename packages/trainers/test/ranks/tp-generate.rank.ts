// Run by test/tp-generation.test.ts under launch(): the same concurrent requests decoded by the
// one-process generator (on rank 0, over the full model) and by the tensor-parallel generator
// over the world as one tp group (rank 0 leads, the others follow), each rank holding only its
// Megatron shards (parallelDecoder). Prints on rank 0
// `RESULT {"ref": [results], "tp": [results], "fullBytes", "shardBytes": [per rank]}`.
import { initEngine } from '@rl2/engine';
import {
  type DecoderModel,
  type GenerationRequest,
  type ModelSpec,
  createGenerator,
  followTensorParallel,
  initRandomModel,
  tensorParallelStepper,
} from '@rl2/models';
import { initProcessGroup } from '@rl2/parallel';
import { parallelDecoder } from '../../src/parallel-model/tensor-parallel-decoder.js';
import type { RankLayout } from '../../src/parallel-model/rank-layout.js';

await initEngine({ backend: 'cpu', threads: 1, logger: () => {} });
const world = await initProcessGroup();
const family = (process.env.FAMILY ?? 'qwen3') as ModelSpec['family'];
const spec: ModelSpec = {
  family,
  vocabSize: 40,
  hiddenSize: 32,
  intermediateSize: 64,
  numLayers: 2,
  numHeads: 4,
  numKvHeads: 2,
  initializerRange: 0.5,
};
const full = initRandomModel(spec, 7);
const bytes = (m: DecoderModel) => [...m.params.values()].reduce((n, t) => n + t.size * 4, 0);
const fullBytes = bytes(full);
const model = parallelDecoder(full, { tp: world } as unknown as RankLayout, 'actor', {
  keepFull: world.rank === 0,
});
const shard = new Float32Array(world.size);
shard[world.rank] = bytes(model);
const shardBytes = Array.from(world.allReduce(shard, 'sum'));

// 7 requests on a 3-row batch: rows join and leave while others decode (continuous batching)
const prompts = [
  [1, 17, 9, 5, 30],
  [2, 8],
  [3, 12, 33, 2, 31, 20, 7, 7],
  [4],
  [5, 6, 7],
  [9, 9, 9, 9],
  [11, 3],
];
const requests: GenerationRequest[] = prompts.map((inputIds, i) => ({
  inputIds,
  maxNewTokens: 4 + (i % 4),
  ignoreEos: true,
  // greedy rows, temperature rows over the whole vocabulary, and rows gathered whole (top-k, top-p, top logprobs)
  ...(i < 3
    ? { temperature: 0 }
    : i < 5
      ? { temperature: 0.8, seed: 100 + i }
      : i === 5
        ? { temperature: 1, topK: 5, seed: 7 }
        : { temperature: 0.9, topP: 0.7, topLogprobs: 3, seed: 8 }),
}));
const strip = (r: {
  outputIds: number[];
  logprobs: number[];
  finishReason: unknown;
  topLogprobs?: unknown;
}) => ({
  outputIds: r.outputIds,
  logprobs: r.logprobs,
  finishReason: r.finishReason,
  topLogprobs: r.topLogprobs,
});

if (world.rank === 0) {
  const one = createGenerator(full, { maxBatch: 3 });
  const ref = await Promise.all(requests.map((r) => one.generate(r)));
  const stepper = tensorParallelStepper(model, world);
  const gen = createGenerator(model, { maxBatch: 3, stepper });
  const tp = await Promise.all(requests.map((r) => gen.generate(r)));
  stepper.close();
  console.log(
    `RESULT ${JSON.stringify({ ref: ref.map(strip), tp: tp.map(strip), fullBytes, shardBytes })}`,
  );
} else {
  await followTensorParallel(model, world);
}
await world.close();
