#!/usr/bin/env node
// The README's main job: SFT then GRPO end to end, as a new user would run it after
// `bash tooling/scripts/setup.sh` (which builds every package), on the RL demo
// (examples/rl-demo: answer "max 3 8 1 5" with the largest digit): write a random tiny Qwen3
// with the addition example's character tokenizer, fine-tune it with
// `rl2 sft --config examples/rl-demo/sft.yaml` on demonstrations that answer with a random digit
// of the prompt (the format, not the rule), then run GRPO on it with
// `rl2 ppo --config examples/rl-demo/grpo.yaml` against a verifiable reward, and point at the
// reports. `pnpm bench rl-demo` runs the same for 3 seeds and 1 and 2 threads. Extra arguments
// are passed to `rl2 ppo` as key=value overrides (e.g. `pnpm main adv.estimator=rloo`).
import { spawnSync } from 'node:child_process';
import { existsSync } from 'node:fs';
import { join, resolve } from 'node:path';

const root = resolve(import.meta.dirname, '..', '..');
const cli = join(root, 'apps', 'cli', 'dist', 'cli.js');
if (!existsSync(cli)) {
  console.error(
    'main: apps/cli/dist/cli.js is missing; run `bash tooling/scripts/setup.sh` (or `pnpm build`) first',
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
  'runs/rl-demo/tiny-qwen3',
  '--hidden-size',
  '64',
  '--layers',
  '2',
  '--heads',
  '4',
]);
run(['sft', '--config', 'examples/rl-demo/sft.yaml']);
// Then GRPO from the SFT checkpoint (runs/rl-demo-sft/latest/model) with a verifiable reward.
run(['ppo', '--config', 'examples/rl-demo/grpo.yaml', ...process.argv.slice(2)]);
console.log(
  'main: done; open runs/rl-demo-sft/report.html and runs/rl-demo-grpo/report.html, or `tensorboard --logdir runs`',
);
