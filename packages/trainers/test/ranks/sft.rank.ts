// Run by test/data-parallel.test.ts under launch(): the tiny SFT run of sft-case.ts on this rank.
// Prints `RESULT {"rank", "steps": [{loss, gradNorm, microBatches}]}`.
import { runSft } from '@rl2/trainers';
import { sftCaseConfig } from '../sft-case.js';

const { CASE_DIR, SAVE_DIR, CASE_OVERRIDES } = process.env;
const steps: { loss: number; gradNorm: number; microBatches: number }[] = [];
const quiet = { write: () => true } as unknown as NodeJS.WriteStream;
await runSft(sftCaseConfig(CASE_DIR as string, SAVE_DIR as string, JSON.parse(CASE_OVERRIDES ?? '[]')), {
  stdout: quiet,
  onStep: (r) => steps.push({ loss: r['train/loss'] as number, gradNorm: r['train/grad_norm'] as number, microBatches: r['train/micro_batches'] as number }),
});
console.log(`RESULT ${JSON.stringify({ rank: Number(process.env.RANK), steps })}`);
