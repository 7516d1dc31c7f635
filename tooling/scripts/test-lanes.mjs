// `pnpm test`: every package's tests in two lanes that run side by side, one per core of a
// 2-core CI machine, each lane's packages one after another. Lane 1: @rl2/trainers (the longest
// package, ~10 of the suite's ~25 CPU-minutes) and @rl2/parallel (~2.5); lane 2: the others
// (~12.5). `turbo run test --concurrency=2` took packages in its own order and often started the
// trainers last, so the suite ran ~2 minutes past its work split over 2 cores. Rebalance the
// lanes when a package's tests grow. Exits 1 when either lane fails; each package's
// .vitest/results.json is what tooling/scripts/test-summary.mjs adds up.
import { spawn } from 'node:child_process';

/** `turbo run test --continue` with `args`; resolves to its exit code. */
const lane = (args) =>
  new Promise((resolve) => {
    const turbo = spawn('pnpm', ['exec', 'turbo', 'run', 'test', '--continue', ...args], {
      stdio: 'inherit',
    });
    turbo.on('error', () => resolve(1));
    turbo.on('exit', (code, signal) => resolve(code ?? (signal ? 1 : 0)));
  });

const first = ['@rl2/trainers', '@rl2/parallel'];
const codes = await Promise.all([
  lane(['--concurrency=1', ...first.map((name) => `--filter=${name}`)]),
  lane(['--concurrency=1', ...first.map((name) => `--filter=!${name}`)]),
]);
process.exit(codes.every((code) => code === 0) ? 0 : 1);
