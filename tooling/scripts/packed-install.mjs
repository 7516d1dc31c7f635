#!/usr/bin/env node
// What an npm user gets: packs every published package of the workspace with `pnpm pack`,
// installs the tarballs into a fresh project with `npm install` (third-party packages from the
// npm cache where it has them, else the registry), and trains the tiny addition example with
// `npx rl2 sft`. Fails unless the engine line says `backend native` with the C kernels, loaded
// from the prebuilt package (@rl2/engine-linux-x64-gnu: no install script, no source build),
// whose binary needs no shared OpenBLAS or libgfortran.
//
//   pnpm packed-install             # after `pnpm build`; prints the engine line and tok/s
//   pnpm packed-install --compare   # also the same run on the cpu fallback (RL2_NO_NATIVE=1)
//                                   # and on the repository's build, as a table
//   options: --steps N (training steps, default 4; 8 with --compare), --keep (keep the temp folder)
import { spawnSync } from 'node:child_process';
import {
  cpSync,
  existsSync,
  mkdirSync,
  mkdtempSync,
  readdirSync,
  readFileSync,
  rmSync,
  writeFileSync,
} from 'node:fs';
import { tmpdir } from 'node:os';
import { join, resolve } from 'node:path';
import { parseArgs } from 'node:util';

const root = resolve(import.meta.dirname, '..', '..');
const { values: opts } = parseArgs({
  options: {
    compare: { type: 'boolean', default: false },
    steps: { type: 'string' },
    keep: { type: 'boolean', default: false },
  },
});
const steps = Number(opts.steps ?? (opts.compare ? 8 : 4));

class PackedInstallError extends Error {}
function fail(message) {
  throw new PackedInstallError(message);
}

/** Runs a command; returns its stdout and stderr, or fails with them. */
function run(cmd, args, options = {}) {
  const r = spawnSync(cmd, args, { encoding: 'utf8', maxBuffer: 64 << 20, ...options });
  if (r.error) fail(`${cmd} ${args.join(' ')}: ${r.error.message}`);
  if (r.status !== 0)
    fail(`${cmd} ${args.join(' ')} exited with ${r.status}:\n${r.stdout}${r.stderr}`);
  return `${r.stdout}${r.stderr}`;
}

function matchesHost(dir) {
  const m = JSON.parse(readFileSync(join(dir, 'package.json'), 'utf8'));
  return m.os?.includes(process.platform) && m.cpu?.includes(process.arch);
}

function main() {
  if (!Number.isInteger(steps) || steps < 2)
    fail(`--steps must be an integer >= 2 (got ${opts.steps})`);
  // Every workspace package that would be published (not private), with its folder.
  const packages = JSON.parse(
    run('pnpm', ['ls', '-r', '--depth', '-1', '--json'], { cwd: root }),
  ).filter((p) => !p.private);
  const prebuilt = packages.find((p) => /^@rl2\/engine-/.test(p.name) && matchesHost(p.path));
  if (!existsSync(join(root, 'apps', 'cli', 'dist', 'cli.js')))
    fail('apps/cli/dist/cli.js is missing; run `pnpm build` first');
  if (!prebuilt)
    fail(
      `no prebuilt-binary package (packages/engine/npm/*) for ${process.platform}-${process.arch}; only linux-x64-gnu is built here`,
    );
  if (!existsSync(join(prebuilt.path, 'rl2_kernels.node'))) {
    fail(
      `${prebuilt.path}/rl2_kernels.node is missing: build it with \`pnpm --filter @rl2/engine ` +
        `build\` (needs libopenblas-pthread-dev for the static OpenBLAS, and a C compiler)`,
    );
  }

  const work = mkdtempSync(join(tmpdir(), 'rl2-packed-'));
  try {
    packAndTrain(work, packages, prebuilt);
  } finally {
    if (opts.keep) console.log(`packed-install: kept ${work}`);
    else rmSync(work, { recursive: true, force: true });
  }
}

function packAndTrain(work, packages, prebuilt) {
  const tarballs = join(work, 'tarballs');
  mkdirSync(tarballs);
  let began = performance.now();
  for (const p of packages) run('pnpm', ['pack', '--pack-destination', tarballs], { cwd: p.path });
  const files = readdirSync(tarballs)
    .filter((f) => f.endsWith('.tgz'))
    .map((f) => join(tarballs, f));
  const binaryTarball = files.find((f) =>
    f.includes(prebuilt.name.replace('@', '').replace('/', '-')),
  );
  if (
    !binaryTarball ||
    !run('tar', ['-tzf', binaryTarball]).split('\n').includes('package/rl2_kernels.node')
  ) {
    fail(`the packed ${prebuilt.name} has no rl2_kernels.node`);
  }
  console.log(
    `packed-install: packed ${files.length} packages in ${((performance.now() - began) / 1000).toFixed(1)} s`,
  );

  const app = join(work, 'app');
  mkdirSync(app);
  writeFileSync(
    join(app, 'package.json'),
    `${JSON.stringify({ name: 'rl2-packed-app', private: true, type: 'module' }, null, 2)}\n`,
  );
  began = performance.now();
  run(
    'npm',
    ['install', '--prefer-offline', '--no-audit', '--no-fund', '--loglevel=error', ...files],
    { cwd: app },
  );
  console.log(
    `packed-install: npm install of the tarballs in ${((performance.now() - began) / 1000).toFixed(1)} s`,
  );
  if (existsSync(join(app, 'node_modules', '@rl2', 'engine', 'build')))
    fail('the installed @rl2/engine has a build/ folder: it must ship no binary of its own');
  const binary = join(app, 'node_modules', prebuilt.name, 'rl2_kernels.node');
  if (!existsSync(binary)) fail(`npm did not install ${prebuilt.name} (${binary} missing)`);
  if (process.platform === 'linux') {
    const libs = run('ldd', [binary]);
    if (/openblas|gfortran|not found/.test(libs))
      fail(`${binary} needs shared libraries beyond libc:\n${libs}`);
  }

  // The tiny example: a random 2-layer Qwen3 with the addition tokenizer, `steps` steps of 32 rows.
  cpSync(join(root, 'examples', 'addition', 'tokenizer'), join(app, 'tokenizer'), {
    recursive: true,
  });
  const rows = readFileSync(join(root, 'examples', 'addition', 'data', 'sft-train.jsonl'), 'utf8')
    .split('\n')
    .filter(Boolean);
  writeFileSync(join(app, 'train.jsonl'), `${rows.slice(0, 32 * steps).join('\n')}\n`);
  const env = { ...process.env };
  for (const key of ['RL2_NATIVE_ADDON', 'RL2_NO_NATIVE', 'RL2_BACKEND']) delete env[key];
  const rl2 = (args, extraEnv = {}) =>
    run('npx', ['--no-install', 'rl2', ...args], { cwd: app, env: { ...env, ...extraEnv } });
  rl2([
    'init-model',
    '--arch',
    'qwen3',
    '--tokenizer',
    'tokenizer',
    '--out',
    'tiny',
    '--hidden-size',
    '64',
    '--layers',
    '2',
    '--heads',
    '4',
  ]);

  const sftArgs = (name) => [
    'sft',
    'actor.model_name=tiny',
    'data.train.path=train.jsonl',
    'data.train.batch_size=32',
    'data.test_ratio=0',
    'actor.lr=3e-3',
    'actor.max_length_per_device=512',
    'trainer.n_epochs=1',
    `trainer.experiment_name=${name}`,
    `trainer.save_dir=runs/${name}`,
    'trainer.progress=lines',
  ];
  /** Trains; returns the engine line and the median tokens/s of steps 2..N (step 1 warms up). */
  const sft = (name, command) => {
    const out = command(sftArgs(name));
    const engine = /rl2 engine: (.*)/.exec(out)?.[1];
    if (!engine) fail(`no "rl2 engine:" line in the output of rl2 sft:\n${out}`);
    const metrics = readFileSync(join(app, 'runs', name, 'metrics.jsonl'), 'utf8')
      .split('\n')
      .filter(Boolean)
      .map((l) => JSON.parse(l));
    const tps = metrics
      .filter((m) => m.step >= 2 && m['train/tokens_per_s'] !== undefined)
      .map((m) => m['train/tokens_per_s'])
      .sort((a, b) => a - b);
    if (tps.length === 0) fail(`no train/tokens_per_s after step 1 in runs/${name}/metrics.jsonl`);
    return { engine, tps: tps[Math.floor(tps.length / 2)] };
  };

  const native = sft('packed-native', (args) => rl2(args));
  console.log(`packed-install: rl2 engine: ${native.engine}`);
  if (
    !/^backend native, /.test(native.engine) ||
    !native.engine.endsWith(`(OpenBLAS sgemm + C kernels from ${prebuilt.name})`)
  )
    fail('the packed install did not train on the native engine (see the engine line above)');
  console.log(`packed-install: ok, ${Math.round(native.tps)} tok/s (median of steps 2-${steps})`);

  if (opts.compare) {
    const fallback = sft('packed-cpu', (args) => rl2(args, { RL2_NO_NATIVE: '1' }));
    const repo = sft('repo-build', (args) =>
      run(process.execPath, [join(root, 'apps', 'cli', 'dist', 'cli.js'), ...args], {
        cwd: app,
        env,
      }),
    );
    const rowsOut = [
      ['npm install of the packed tarballs (prebuilt @rl2/engine-linux-x64-gnu)', native],
      ['the same install with RL2_NO_NATIVE=1 (what npm users got before: cpu fallback)', fallback],
      ['the repository build (`pnpm build`, apps/cli/dist/cli.js)', repo],
    ];
    console.log(
      `\n${steps} steps of 32 rows, tiny Qwen3 (hidden 64, 2 layers), median tok/s of steps 2-${steps}:\n`,
    );
    console.log('| install | engine line | tok/s | vs cpu |');
    console.log('| --- | --- | ---: | ---: |');
    for (const [what, r] of rowsOut) {
      console.log(
        `| ${what} | \`${r.engine}\` | ${Math.round(r.tps).toLocaleString('en-US')} | ${(r.tps / fallback.tps).toFixed(1)}x |`,
      );
    }
  }
}

try {
  main();
} catch (err) {
  if (!(err instanceof PackedInstallError)) throw err;
  console.error(`packed-install: ${err.message}`);
  process.exitCode = 1;
}
