#!/usr/bin/env node
// Builds the optional Gloo addon (native/*.cc -> build/rl2_gloo.node) with the system C++
// compiler, Node's own headers and Debian's libgloo-dev. Offline (no header download). Never
// fails the package build: when something is missing it prints ONE line saying what to install
// and initProcessGroup falls back to the socket collectives (unless RL2_REQUIRE_GLOO=1: then that
// line is an error and the build fails). Output in build/ (git-ignored; in turbo.json outputs).
import { spawnSync } from 'node:child_process';
import { existsSync, mkdirSync, readdirSync, renameSync } from 'node:fs';
import { dirname, join, resolve } from 'node:path';

const pkg = resolve(import.meta.dirname, '..');
const nativeDir = join(pkg, 'native');
const sources = readdirSync(nativeDir)
  .filter((f) => f.endsWith('.cc'))
  .sort()
  .map((f) => join(nativeDir, f));
const out = join(pkg, 'build', 'rl2_gloo.node');

function notice(reason) {
  if (process.env.RL2_REQUIRE_GLOO === '1') {
    console.error(
      `parallel-build-native: gloo addon not built (${reason}), and RL2_REQUIRE_GLOO=1 requires it`,
    );
    process.exit(1);
  }
  console.log(
    `parallel-build-native: gloo addon not built (${reason}); collectives will use the socket transport`,
  );
  process.exit(0);
}

if (process.env.RL2_NO_NATIVE === '1') notice('RL2_NO_NATIVE=1');
if (process.platform !== 'linux') notice(`platform ${process.platform} is not supported`);
const glooInclude = ['/usr/include', '/usr/local/include'].find((dir) =>
  existsSync(join(dir, 'gloo', 'allreduce.h')),
);
if (!glooInclude)
  notice(
    'gloo/allreduce.h not found; install libgloo-dev (Debian/Ubuntu), or run tooling/scripts/setup.sh as root',
  );
const candidates = [
  join(dirname(process.execPath), '..', 'include', 'node'),
  process.env.npm_config_nodedir && join(process.env.npm_config_nodedir, 'include', 'node'),
  process.env.HOME &&
    join(process.env.HOME, '.cache', 'node-gyp', process.versions.node, 'include', 'node'),
  '/usr/include/node',
  '/usr/local/include/node',
].filter(Boolean);
const headers = candidates.find((dir) => existsSync(join(dir, 'node_api.h')));
if (!headers)
  notice(
    `node_api.h not found in ${candidates.join(', ')}; install Node's headers (Debian: libnode-dev)`,
  );

const cxx = process.env.CXX || 'c++';
const flags = [
  '-O2',
  '-fPIC',
  '-shared',
  '-std=c++17',
  '-Wall',
  '-fvisibility=hidden',
  '-DNODE_GYP_MODULE_NAME=rl2_gloo',
  `-I${headers}`,
  `-I${glooInclude}`,
  ...sources,
  '-lgloo',
  '-pthread',
];
mkdirSync(dirname(out), { recursive: true });
const tmp = `${out}.${process.pid}.tmp`;
const r = spawnSync(cxx, [...flags, '-o', tmp], { encoding: 'utf8' });
if (r.error) notice(`compiler "${cxx}" not runnable: ${r.error.message}; install g++`);
if (r.status !== 0) {
  const first = (r.stderr || '').split('\n').find((l) => /error/.test(l)) ?? `exit ${r.status}`;
  notice(`${cxx} failed: ${first.trim()}; install libgloo-dev and g++`);
}
renameSync(tmp, out);
console.log(`parallel-build-native: built ${out}`);
