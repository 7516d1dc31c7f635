#!/usr/bin/env node
// The README's main job: the SFT example end to end, as a new user would run it after
// `bash tooling/scripts/setup.sh` (which builds every package): write a random tiny Qwen3
// with the example's character tokenizer, fine-tune it on multi-digit addition with
// `rl2 sft --config examples/addition/sft.yaml`, then run GRPO on it with
// `rl2 ppo --config examples/addition-grpo/grpo.yaml`, and point at the reports. Extra arguments
// are passed to `rl2 sft` as key=value overrides (e.g. `pnpm main trainer.n_epochs=3`).
import { spawnSync } from 'node:child_process';
import { existsSync } from 'node:fs';
import { join, resolve } from 'node:path';

const root = resolve(import.meta.dirname, '..', '..');
const cli = join(root, 'apps', 'cli', 'dist', 'cli.js');
if (!existsSync(cli)) {
  console.error('main: apps/cli/dist/cli.js is missing; run `bash tooling/scripts/setup.sh` (or `pnpm build`) first');
  process.exit(1);
}
const run = (args) => {
  console.log(`$ rl2 ${args.join(' ')}`);
  const r = spawnSync(process.execPath, [cli, ...args], { stdio: 'inherit', cwd: root });
  if (r.status !== 0) process.exit(r.status ?? 1);
};
run(['init-model', '--arch', 'qwen3', '--tokenizer', 'examples/addition/tokenizer', '--out', 'runs/addition/tiny-qwen3', '--hidden-size', '64', '--layers', '2', '--heads', '4']);
// 16 epochs (about a minute with the native kernels) so that GRPO starts from a model that
// gets the answer format right and has room to improve; later key=value arguments win.
run(['sft', '--config', 'examples/addition/sft.yaml', 'trainer.n_epochs=16', ...process.argv.slice(2)]);
// Then GRPO from the SFT checkpoint (runs/addition-sft/latest/model) with a verifiable reward.
run(['ppo', '--config', 'examples/addition-grpo/grpo.yaml']);
console.log('main: done; open runs/addition-sft/report.html and runs/addition-grpo/report.html, or `tensorboard --logdir runs`');
