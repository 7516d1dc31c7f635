// Run by test/tp-generation.test.ts under launch(): the tensor-parallel generator over the
// world as one tp group, where rank 0 throws inside a decode step's forward (layer 0's
// down_proj, before its all-reduce) while rank 1 waits in that all-reduce. Prints on rank 0
// `RESULT {"first", "second", "broken"}`: what the request that hit the fault and a later one
// got, and the stepper's `broken`; then rank 0 exits, and rank 1 must fail instead of hanging.
import { initEngine } from '@rl2/engine';
import {
  type DecoderModel,
  createGenerator,
  followTensorParallel,
  initRandomModel,
  tensorParallelStepper,
} from '@rl2/models';
import { initProcessGroup } from '@rl2/parallel';
import type { RankLayout } from '../../src/parallel-model/rank-layout.js';
import { parallelDecoder } from '../../src/parallel-model/tensor-parallel-decoder.js';

await initEngine({ backend: 'cpu', threads: 1, logger: () => {} });
const world = await initProcessGroup();
const full = initRandomModel(
  {
    family: 'qwen3',
    vocabSize: 40,
    hiddenSize: 32,
    intermediateSize: 64,
    numLayers: 2,
    numHeads: 4,
    numKvHeads: 2,
  },
  7,
);
const sharded = parallelDecoder(full, { tp: world } as unknown as RankLayout, 'actor');

/** `model` whose layer-0 down_proj throws on its `at`-th forward (1: the prefill). */
function faultyAt(model: DecoderModel, at: number): DecoderModel {
  let calls = 0;
  return {
    ...model,
    linear: (name, params) => {
      const inner = model.linear(name, params);
      if (name !== 'model.layers.0.mlp.down_proj') return inner;
      return {
        ...inner,
        forward: (x) => {
          calls += 1;
          if (calls === at) throw new Error('injected fault in down_proj');
          return inner.forward(x);
        },
      };
    },
  };
}

const message = (e: unknown) => `${(e as { code?: string }).code ?? ''} ${(e as Error).message}`;
if (world.rank === 0) {
  const model = faultyAt(sharded, 3);
  const stepper = tensorParallelStepper(model, world);
  const gen = createGenerator(model, { maxBatch: 2, stepper });
  const request = { inputIds: [1, 2, 3], maxNewTokens: 5, temperature: 0, ignoreEos: true };
  const first = await gen.generate(request).then(() => 'ok', message);
  const second = await gen.generate(request).then(() => 'ok', message);
  const line = `RESULT ${JSON.stringify({ first, second, broken: stepper.broken?.message })}\n`;
  // exit without closing the group: rank 1 is still inside the faulty forward's all-reduce
  process.stdout.write(line, () => process.exit(0));
} else {
  await followTensorParallel(sharded, world);
}
