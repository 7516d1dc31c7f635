#!/usr/bin/env node
// The README's main job on the embedded default. Each stage of the project replaces what this
// runs: for now the tensor engine benchmark when it exists.
import { spawnSync } from 'node:child_process';
import { existsSync } from 'node:fs';
import { join, resolve } from 'node:path';

const root = resolve(import.meta.dirname, '..', '..');
const run = (cmd, args) => {
  console.log(`$ ${cmd} ${args.join(' ')}`);
  const r = spawnSync(cmd, args, { stdio: 'inherit', cwd: root });
  if (r.status !== 0) process.exit(r.status ?? 1);
};
if (existsSync(join(root, 'packages', 'models', 'bench', 'engine.bench.ts'))) {
  run('node', ['tooling/scripts/bench.mjs', 'engine', ...process.argv.slice(2)]);
} else {
  run('node', ['apps/cli/dist/cli.js', '--help']);
}
