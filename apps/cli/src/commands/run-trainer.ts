import { readLaunchEnv } from '@rl2/parallel';
import {
  type DpoConfig,
  type RmConfig,
  type RunResult,
  type SftConfig,
  runDpo,
  runRm,
  runSft,
} from '@rl2/trainers';
import type { CliIo } from '../cli-io.js';
import { interruptedExitCode } from '../interrupt.js';
import type { TrainerName } from './trainer-command.js';

/** Runs a validated config; returns the exit code (130 / 143 when Ctrl-C / SIGTERM stopped it after saving). */
export async function runTrainerCommand(
  name: Exclude<TrainerName, 'ppo'>,
  config: unknown,
  io: CliIo,
): Promise<number> {
  const runIo = { stdout: io.stdout, signal: io.signal };
  let result: RunResult;
  if (name === 'sft') result = await runSft(config as SftConfig, runIo);
  else if (name === 'rm') result = await runRm(config as RmConfig, runIo);
  else result = await runDpo(config as DpoConfig, runIo);
  if (result.interrupted) return interruptedExitCode(io.signal);
  // Under `rl2 launch` every rank runs this; only rank 0 wrote the checkpoint, so only it says so.
  if (readLaunchEnv(process.env).rank === 0)
    io.stdout.write(`done: ${result.step} steps, checkpoint ${result.checkpoint}\n`);
  return 0;
}
