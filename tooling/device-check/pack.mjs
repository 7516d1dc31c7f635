#!/usr/bin/env node
// Packs the GPU device check into build/device-check/ (ignored by git; under 64 MiB): this
// machine's Node binary (xz), check.ts bundled into one file with every @rl2 package and tfjs,
// the `webgpu` package's dawn.node beside it, the character tokenizer, torch_check.py and run.sh.
// On the GPU machine (Vulkan driver, PyTorch, no Node, no network): `bash build/device-check/run.sh`
// (add `tiny` for the small shape). Run `pnpm build` first; `node tooling/device-check/pack.mjs`.
import { execFileSync } from 'node:child_process';
import {
  copyFileSync,
  cpSync,
  existsSync,
  mkdirSync,
  readdirSync,
  rmSync,
  statSync,
} from 'node:fs';
import { createRequire } from 'node:module';
import { dirname, join, resolve } from 'node:path';

const here = import.meta.dirname;
const root = resolve(here, '..', '..');
const out = join(root, 'build', 'device-check');
const nodeXz = join(out, 'node.xz');
const keptNode =
  existsSync(nodeXz) && statSync(nodeXz).mtimeMs > statSync(process.execPath).mtimeMs;
for (const f of existsSync(out) ? readdirSync(out) : [])
  if (!(keptNode && f === 'node.xz')) rmSync(join(out, f), { recursive: true, force: true });
mkdirSync(out, { recursive: true });

// check.ts with everything but dawn.node in one ES module (tsup = esbuild)
execFileSync(
  join(root, 'node_modules', '.bin', 'tsup'),
  ['--config', join(here, 'tsup.config.ts'), '--out-dir', out, '--silent'],
  { cwd: here, stdio: 'inherit' },
);

// the webgpu package as node resolves it next to the bundle: index.js + this platform's dawn.node
const engineRequire = createRequire(join(root, 'packages', 'engine', 'package.json'));
const webgpu = dirname(engineRequire.resolve('webgpu/package.json'));
const webgpuOut = join(out, 'node_modules', 'webgpu');
mkdirSync(join(webgpuOut, 'dist', 'linux-x64'), { recursive: true });
for (const f of ['index.js', 'package.json']) copyFileSync(join(webgpu, f), join(webgpuOut, f));
copyFileSync(
  join(webgpu, 'dist', 'linux-x64', 'dawn.node'),
  join(webgpuOut, 'dist', 'linux-x64', 'dawn.node'),
);
cpSync(
  join(root, 'packages', 'trainers', 'test', 'fixtures', 'char-tokenizer'),
  join(out, 'char-tokenizer'),
  {
    recursive: true,
  },
);
for (const f of ['torch_check.py', 'run.sh', 'tabulate.py'])
  copyFileSync(join(here, f), join(out, f));
// Node itself, compressed (the GPU machine decompresses it with Python's lzma)
if (!keptNode) execFileSync('sh', ['-c', `xz -T0 -3 -c "${process.execPath}" > "${nodeXz}"`]);

const size = (p) => {
  const s = statSync(p);
  return s.isDirectory() ? readdirSync(p).reduce((n, f) => n + size(join(p, f)), 0) : s.size;
};
const mib = size(out) / 2 ** 20;
console.log(`device check packed in ${out}: ${mib.toFixed(1)} MiB`);
if (mib >= 64) {
  console.error('the bundle must stay under 64 MiB (the device tool carries at most that)');
  process.exit(1);
}
