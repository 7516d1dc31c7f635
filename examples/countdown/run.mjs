#!/usr/bin/env node
// The Countdown example end to end (after `pnpm build`): a random tiny Qwen3 with the addition
// example's character tokenizer, SFT on solutions to teach the <answer> format, then GRPO with
// RL2's countdown reward. From the repository root: `node examples/countdown/run.mjs`; extra
// key=value arguments go to `rl2 ppo` (e.g. `trainer.max_steps=20`).
import { spawnSync } from 'node:child_process';
import { existsSync } from 'node:fs';
import { join, resolve } from 'node:path';

const root = resolve(import.meta.dirname, '..', '..');
const cli = join(root, 'apps', 'cli', 'dist', 'cli.js');
if (!existsSync(cli)) {
  console.error(
    'countdown: apps/cli/dist/cli.js is missing; run `bash tooling/scripts/setup.sh` (or `pnpm build`) first',
  );
  process.exit(1);
}
const run = (args) => {
  console.log(`$ rl2 ${args.join(' ')}`);
  const r = spawnSync(process.execPath, [cli, ...args], { stdio: 'inherit', cwd: root });
  if (r.status !== 0) process.exit(r.status ?? 1);
};
run([
  'init-model',
  '--arch',
  'qwen3',
  '--tokenizer',
  'examples/addition/tokenizer',
  '--out',
  'runs/countdown/tiny-qwen3',
  '--hidden-size',
  '64',
  '--layers',
  '2',
  '--heads',
  '4',
]);
run(['sft', '--config', 'examples/countdown/sft.yaml']);
run(['ppo', '--config', 'examples/countdown/grpo.yaml', ...process.argv.slice(2)]);
console.log(
  'countdown: done; runs/countdown-grpo/report.html plots the rewards, runs/countdown-grpo/rollouts/ holds the samples',
);
