import { type PpoConfig, type PpoRunResult, runPpo } from '@rl2/trainers';
import type { CliIo } from '../cli-io.js';
import { interruptedExitCode } from '../interrupt.js';

const reward = (r: PpoRunResult, i: number) => r.tests.at(i)?.['test/reward/mean'];

/** Runs a validated `rl2 ppo` config; returns the exit code (130 / 143 when Ctrl-C / SIGTERM stopped it after saving). */
export async function runPpoCommand(config: PpoConfig, io: CliIo): Promise<number> {
  const result = await runPpo(config, { stdout: io.stdout, signal: io.signal });
  if (result.interrupted) return interruptedExitCode(io.signal);
  const [before, after] = [reward(result, 0), reward(result, -1)];
  const tested =
    before !== undefined && after !== undefined && result.tests.length > 1
      ? `, test reward ${before.toFixed(4)} -> ${after.toFixed(4)}`
      : '';
  io.stdout.write(`done: ${result.step} steps${tested}, checkpoint ${result.checkpoint}\n`);
  return 0;
}
