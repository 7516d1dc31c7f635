#!/usr/bin/env node
// Builds the optional native kernels (native/*.c -> build/rl2_kernels.node)
// with the system C compiler, Node's own headers and Debian's OpenBLAS. Offline: no header
// download (node-gyp would fetch them). Never fails the package build: when something is
// missing it prints ONE line saying what to install, and initEngine falls back to wasm/cpu
// (unless RL2_REQUIRE_NATIVE=1, as CI sets: then that line is an error and the build fails).
// Output in build/ (git-ignored; tsup's clean of dist/ leaves it alone; listed in turbo.json outputs).
import { spawnSync } from 'node:child_process';
import { existsSync, mkdirSync, readdirSync, renameSync } from 'node:fs';
import { dirname, join, resolve } from 'node:path';

const pkg = resolve(import.meta.dirname, '..');
const nativeDir = join(pkg, 'native');
const sources = readdirSync(nativeDir).filter((f) => f.endsWith('.c')).sort().map((f) => join(nativeDir, f));
const outDir = join(pkg, 'build');
const out = join(outDir, 'rl2_kernels.node');

function notice(reason) {
  if (process.env.RL2_REQUIRE_NATIVE === '1') {
    console.error(`engine-build-native: native kernels not built (${reason}), and RL2_REQUIRE_NATIVE=1 requires them`);
    process.exit(1);
  }
  console.log(`engine-build-native: native kernels not built (${reason}); the engine will use the stock tfjs backends (wasm, cpu)`);
  process.exit(0);
}

if (process.env.RL2_NO_NATIVE === '1') notice('RL2_NO_NATIVE=1');
if (process.platform !== 'linux' && process.platform !== 'darwin') notice(`platform ${process.platform} is not supported`);

// Node's headers: next to the running node (Debian /usr/include/node, nvm, official tarballs),
// or where npm's node-gyp would look (`npm config get nodedir`, ~/.cache/node-gyp/<version>).
const candidates = [
  join(dirname(process.execPath), '..', 'include', 'node'),
  process.env.npm_config_nodedir && join(process.env.npm_config_nodedir, 'include', 'node'),
  process.env.HOME && join(process.env.HOME, '.cache', 'node-gyp', process.versions.node, 'include', 'node'),
  '/usr/include/node',
  '/usr/local/include/node',
].filter(Boolean);
const headers = candidates.find((dir) => existsSync(join(dir, 'node_api.h')));
if (!headers) notice(`node_api.h not found in ${candidates.join(', ')}; install Node's headers (Debian: libnode-dev)`);

const cc = process.env.CC || 'cc';
// Debian installs cblas.h under /usr/include/<triplet> with libopenblas-dev; the openblas
// subfolders cover distributions that keep it there.
const includes = ['/usr/include/openblas', '/usr/include/x86_64-linux-gnu/openblas-pthread', '/usr/include/aarch64-linux-gnu/openblas-pthread']
  .filter((dir) => existsSync(dir))
  .map((dir) => `-I${dir}`);
const flags = [
  '-O3', '-fPIC', '-shared', '-std=gnu11', '-fno-math-errno', '-fno-trapping-math', '-Wall',
  '-fvisibility=hidden', `-I${headers}`, ...includes, ...sources, '-lopenblas', '-lm',
];
if (process.platform === 'darwin') flags.push('-undefined', 'dynamic_lookup');

mkdirSync(outDir, { recursive: true });
const tmp = `${out}.${process.pid}.tmp`;
const r = spawnSync(cc, [...flags, '-o', tmp], { encoding: 'utf8' });
if (r.error) notice(`compiler "${cc}" not runnable: ${r.error.message}; install g++/gcc`);
if (r.status !== 0) {
  const first = (r.stderr || '').split('\n').find((l) => /error/.test(l)) ?? `exit ${r.status}`;
  notice(`${cc} failed: ${first.trim()}; install libopenblas-dev and a C compiler`);
}
renameSync(tmp, out);
console.log(`engine-build-native: built ${out}`);
