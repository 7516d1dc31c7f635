// `pnpm test`: every package's tests in two lanes that run side by side, one per core of a
// 2-core CI machine: @rl2/trainers (the longest package, ~10 of the suite's ~25 CPU-minutes) alone
// in one, the other packages one after another in the other. `turbo run test --concurrency=2`
// took packages in its own order and often started the trainers last, so the suite ran ~2
// minutes past the sum of its parts split over 2 cores. Exits 1 when either lane fails; each
// package's .vitest/results.json is what tooling/scripts/test-summary.mjs adds up.
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

const codes = await Promise.all([
  lane(['--filter=@rl2/trainers']),
  lane(['--concurrency=1', '--filter=!@rl2/trainers']),
]);
process.exit(codes.every((code) => code === 0) ? 0 : 1);
