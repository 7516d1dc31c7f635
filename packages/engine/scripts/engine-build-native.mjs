#!/usr/bin/env node
// Builds the optional native kernels (native/*.c -> build/rl2_kernels.node)
// with the system C compiler, Node's own headers and OpenBLAS (linked statically when its
// archive libopenblas.a is installed: Debian libopenblas-pthread-dev; else the shared library).
// Offline: no header download (node-gyp would fetch them). Never fails the package build: when
// something is missing it prints ONE line saying what to install, and initEngine falls back to
// cpu (unless RL2_REQUIRE_NATIVE=1, as CI sets: then that line is an error and the build fails).
// Output in build/ (git-ignored; tsup's clean of dist/ leaves it alone; listed in turbo.json
// outputs). A self-contained build (static OpenBLAS, or Accelerate on macOS) is also copied into
// the prebuilt-binary package for this machine, npm/<platform>/ (@rl2/engine-linux-x64-gnu),
// when the repository has one; a build that is not self-contained removes the copy there, so
// the loader never picks a binary older than build/.
// Also run by npm users as the source-build fallback:
//   node node_modules/@rl2/engine/scripts/engine-build-native.mjs
import { spawnSync } from 'node:child_process';
import {
  copyFileSync,
  existsSync,
  mkdirSync,
  readdirSync,
  readFileSync,
  renameSync,
  rmSync,
} from 'node:fs';
import { dirname, join, resolve } from 'node:path';

const pkg = resolve(import.meta.dirname, '..');
const nativeDir = join(pkg, 'native');
const sources = readdirSync(nativeDir)
  .filter((f) => f.endsWith('.c'))
  .sort()
  .map((f) => join(nativeDir, f));
const outDir = join(pkg, 'build');
const out = join(outDir, 'rl2_kernels.node');

function notice(reason) {
  if (process.env.RL2_REQUIRE_NATIVE === '1') {
    console.error(
      `engine-build-native: native kernels not built (${reason}), and RL2_REQUIRE_NATIVE=1 requires them`,
    );
    process.exit(1);
  }
  console.log(
    `engine-build-native: native kernels not built (${reason}); the engine will use the stock tfjs backends (wasm, cpu)`,
  );
  process.exit(0);
}

if (process.env.RL2_NO_NATIVE === '1') notice('RL2_NO_NATIVE=1');
if (process.platform !== 'linux' && process.platform !== 'darwin')
  notice(`platform ${process.platform} is not supported`);

// Node's headers: next to the running node (Debian /usr/include/node, nvm, official tarballs),
// or where npm's node-gyp would look (`npm config get nodedir`, ~/.cache/node-gyp/<version>).
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

// The prebuilt-binary package whose os/cpu/libc fields match this machine (npm/*/package.json;
// only in the repository: the published @rl2/engine does not ship npm/).
const musl =
  process.platform === 'linux' &&
  existsSync('/lib') &&
  readdirSync('/lib').some((f) => f.startsWith('ld-musl-'));
const npmDir = join(pkg, 'npm');
const platformPackage = (existsSync(npmDir) ? readdirSync(npmDir, { withFileTypes: true }) : [])
  .filter((d) => d.isDirectory())
  .map((d) => join(npmDir, d.name))
  .find((dir) => {
    const file = join(dir, 'package.json');
    if (!existsSync(file)) return false;
    const m = JSON.parse(readFileSync(file, 'utf8'));
    return (
      m.os?.includes(process.platform) &&
      m.cpu?.includes(process.arch) &&
      (!m.libc || m.libc.includes(musl ? 'musl' : 'glibc'))
    );
  });

// OpenBLAS's static archive, so the binary needs nothing but libc and libm. Debian's
// (libopenblas-pthread-dev) holds every CPU's kernels (DYNAMIC_ARCH) and needs no libgfortran
// for sgemm. RL2_OPENBLAS_A=/path/libopenblas.a names another one.
const triplet = { x64: 'x86_64-linux-gnu', arm64: 'aarch64-linux-gnu' }[process.arch];
const staticBlas =
  process.platform === 'darwin'
    ? undefined
    : [
        process.env.RL2_OPENBLAS_A,
        triplet && `/usr/lib/${triplet}/openblas-pthread/libopenblas.a`,
        triplet && `/usr/lib/${triplet}/libopenblas.a`,
        '/usr/lib64/libopenblas.a',
        '/usr/local/lib/libopenblas.a',
      ].find((f) => f && existsSync(f));
// Accelerate is part of macOS: a build against it is as self-contained as a static OpenBLAS.
const selfContained = process.platform === 'darwin' || staticBlas !== undefined;
if (platformPackage && !selfContained && process.env.RL2_REQUIRE_NATIVE === '1') {
  notice(
    `no libopenblas.a for the prebuilt package ${platformPackage}; install libopenblas-pthread-dev (Debian) or set RL2_OPENBLAS_A`,
  );
}

const cc = process.env.CC || 'cc';
// Debian installs cblas.h under /usr/include/<triplet> with libopenblas-dev; the openblas
// subfolders cover distributions that keep it there.
const includes = [
  '/usr/include/openblas',
  '/usr/include/x86_64-linux-gnu/openblas-pthread',
  '/usr/include/aarch64-linux-gnu/openblas-pthread',
]
  .filter((dir) => existsSync(dir))
  .map((dir) => `-I${dir}`);
const blas =
  process.platform === 'darwin'
    ? ['-framework', 'Accelerate']
    : staticBlas
      ? // --exclude-libs keeps OpenBLAS's symbols out of the addon's exports (no clash with another
        // BLAS in the process); --gc-sections drops what the kernels never call.
        [staticBlas, '-lpthread', '-Wl,--exclude-libs,ALL', '-Wl,--gc-sections', '-s']
      : ['-lopenblas'];
const flags = [
  '-O3',
  '-fPIC',
  '-shared',
  '-std=gnu11',
  '-fno-math-errno',
  '-fno-trapping-math',
  '-Wall',
  '-fvisibility=hidden',
  '-ffunction-sections',
  '-fdata-sections',
  `-I${headers}`,
  ...includes,
  ...sources,
  ...blas,
  '-lm',
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
const how =
  process.platform === 'darwin'
    ? 'Accelerate'
    : staticBlas
      ? `OpenBLAS static, ${staticBlas}`
      : 'OpenBLAS shared';
console.log(`engine-build-native: built ${out} (${how})`);
if (platformPackage) {
  const prebuilt = join(platformPackage, 'rl2_kernels.node');
  if (selfContained) {
    copyFileSync(out, prebuilt);
    console.log(`engine-build-native: copied into ${prebuilt}`);
  } else if (existsSync(prebuilt)) {
    rmSync(prebuilt);
    console.log(
      `engine-build-native: removed ${prebuilt} (this build links the shared OpenBLAS; install ` +
        `libopenblas-pthread-dev for a self-contained one)`,
    );
  }
}
