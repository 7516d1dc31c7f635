// Run by test/fsdp.test.ts under launch(): the first step of the train-case.ts SFT run under
// FSDP over the world (parameters, gradients and AdamW state sharded), compared with the
// one-process trainer's checkpoint after that step (REF_DIR). Prints
// `RESULT {"rank", "loss", "gradNorm", "errors": {name: ||fsdp - ref|| / ||ref||}, "stateFloats", "totalFloats"}`.
import { loadTokenizer } from '@rl2/data';
import { initEngine, loadModel } from '@rl2/models';
import { initProcessGroup } from '@rl2/parallel';
import { Rng, fsdpObjectiveStep, loadItems, packBins, scheduledLr, sftObjective, shardModel, stepTotals, sumTotalsOverRanks } from '../../src/index.js';
import type * as tf from '@tensorflow/tfjs-core';
import { caseConfig } from '../train-case.js';

await initEngine({ backend: 'cpu', threads: 1, logger: () => {} });
const config = caseConfig('sft', process.env.CASE_DIR as string, process.env.CASE_DIR as string);
const m = config.actor;
const tokenizer = await loadTokenizer(m.model_name);
const { train } = await loadItems('sft', tokenizer, config.data, config.trainer.seed);
// the loop's first batch: the epoch's seeded permutation
const order = config.data.shuffle ? new Rng(config.trainer.seed).permutation(train.length) : train.map((_, i) => i);
const batch = order.slice(0, Math.min(config.data.train.batch_size, train.length)).map((i) => train[i] as (typeof train)[number]);

const world = await initProcessGroup();
const dp = { rank: world.rank, size: world.size, allReduceSum: (b: Float32Array) => world.allReduce(b, 'sum'), close: () => world.close() };
const bins = packBins(batch, m.max_length_per_device, 1, 'actor.max_length_per_device', dp);
const totals = sumTotalsOverRanks(dp, stepTotals(bins));
const { model } = await loadModel(m.model_name);
const fsdp = shardModel(model, { fsdp: world });
const lr = scheduledLr(0, { lr: m.lr, minLr: m.min_lr, warmupRatio: m.warmup_ratio, totalSteps: 1, kind: m.scheduler });
const states: Parameters<typeof fsdpObjectiveStep>[5]['states'] = [];
const { loss, gradNorm } = fsdpObjectiveStep(fsdp, model, (mm) => sftObjective(mm, { avgLevel: m.avg_level, recompute: false }), bins, totals, {
  optimizer: { lr, beta1: m.betas[0], beta2: m.betas[1], eps: m.eps, weightDecay: m.weight_decay },
  states,
  maxGradNorm: m.max_grad_norm,
  dp: world,
});
const updated = fsdp.gatherAll();
const ref = (await loadModel(process.env.REF_DIR as string)).model.params;
const errors: Record<string, number> = {};
for (const [name, want] of ref) {
  const a = (updated[name] as tf.Tensor).dataSync();
  const b = want.dataSync();
  let num = 0;
  let den = 0;
  for (let i = 0; i < b.length; i++) {
    num += ((a[i] as number) - (b[i] as number)) ** 2;
    den += (b[i] as number) ** 2;
  }
  errors[name] = Math.sqrt(num / den);
}
const stateFloats = states.reduce((s, st) => s + st.m.length + st.v.length, 0);
const totalFloats = [...model.params.values()].reduce((s, v) => s + v.size, 0);
console.log(`RESULT ${JSON.stringify({ rank: world.rank, loss, gradNorm, errors, stateFloats, totalFloats })}`);
await world.close();
