// Run by test/data-parallel.test.ts (and bench/sft-parallel.bench.ts) under launch(): the tiny
// run of train-case.ts (CASE_KIND sft or dpo) on this rank.
// Prints `RESULT {"rank", "steps": [{loss, gradNorm, microBatches, tokensPerSecond}]}`.
import { runDpo, runSft } from '../../src/index.js';
import { type CaseKind, caseConfig } from '../train-case.js';

const { CASE_DIR, SAVE_DIR, CASE_OVERRIDES } = process.env;
const kind = (process.env.CASE_KIND ?? 'sft') as CaseKind;
const steps: { loss: number; gradNorm: number; microBatches: number; tokensPerSecond: number }[] =
  [];
const quiet = { write: () => true } as unknown as NodeJS.WriteStream;
const io = {
  stdout: quiet,
  onStep: (r: Record<string, number>) =>
    steps.push({
      loss: r['train/loss'] as number,
      gradNorm: r['train/grad_norm'] as number,
      microBatches: r['train/micro_batches'] as number,
      tokensPerSecond: r['train/tokens_per_s'] as number,
    }),
};
const overrides = JSON.parse(CASE_OVERRIDES ?? '[]') as string[];
if (kind === 'sft')
  await runSft(caseConfig('sft', CASE_DIR as string, SAVE_DIR as string, overrides), io);
else await runDpo(caseConfig('dpo', CASE_DIR as string, SAVE_DIR as string, overrides), io);
console.log(`RESULT ${JSON.stringify({ rank: Number(process.env.RANK), steps })}`);
