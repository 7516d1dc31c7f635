#!/usr/bin/env node
// `pnpm bench <name> [args]` runs packages/*/bench/<name>.ts with tsx (no build needed).
// `pnpm bench` with no name lists the benchmarks.
import { spawnSync } from 'node:child_process';
import { existsSync, readdirSync } from 'node:fs';
import { join, resolve } from 'node:path';

const root = resolve(import.meta.dirname, '..', '..');
const found = new Map();
for (const pkg of readdirSync(join(root, 'packages'))) {
  const dir = join(root, 'packages', pkg, 'bench');
  if (!existsSync(dir)) continue;
  for (const file of readdirSync(dir)) {
    if (file.endsWith('.bench.ts')) found.set(file.slice(0, -'.bench.ts'.length), join(dir, file));
  }
}
const [name, ...args] = process.argv.slice(2);
if (!name || !found.has(name)) {
  if (name) console.error(`No benchmark named "${name}".`);
  console.log(`Benchmarks: ${[...found.keys()].sort().join(', ') || '(none yet)'}`);
  console.log('Run one with: pnpm bench <name>');
  process.exit(name ? 1 : 0);
}
const tsx = join(root, 'node_modules', '.bin', 'tsx');
const r = spawnSync(tsx, [found.get(name), ...args], { stdio: 'inherit' });
process.exit(r.status ?? 1);
