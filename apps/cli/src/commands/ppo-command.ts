import {
  type PpoRunResult,
  formatConfigHelp,
  loadConfig,
  ppoConfigSchema,
  runPpo,
} from '@rl2/trainers';
import type { CAC } from 'cac';
import { stringify } from 'yaml';
import type { CliIo } from '../cli-io.js';
import { interruptedExitCode } from '../interrupt.js';

/** `--help` body of `rl2 ppo`: the config tree with defaults and docs. */
export function ppoHelp(): string {
  return `Config (set with key=value, or in --config FILE.yaml; \${a.b} interpolates):\n${formatConfigHelp(ppoConfigSchema)}`;
}

const reward = (r: PpoRunResult, i: number) => r.tests.at(i)?.['test/reward/mean'];

/** Registers `rl2 ppo [--config FILE] [key=value ...]`: RL2's PPO/GRPO trainer. */
export function registerPpoCommand(cli: CAC, io: CliIo): void {
  cli
    .command(
      'ppo [...overrides]',
      'PPO / GRPO on {prompt|messages, answer} rows with a reward env (rollout.env_path)',
    )
    .usage('ppo [--config FILE.yaml] [key=value ...]')
    .option('--config <file>', 'YAML config file; key=value arguments override it')
    .option('--dry-run', 'print the resolved config as YAML and exit')
    .example('rl2 ppo --config examples/addition-grpo/grpo.yaml trainer.max_steps=10')
    .action(async (overrides: string[], flags: { config?: string; dryRun?: boolean }) => {
      const config = loadConfig(ppoConfigSchema, { configFile: flags.config, overrides });
      if (flags.dryRun) {
        io.stdout.write(stringify(config));
        return 0;
      }
      const result = await runPpo(config, { stdout: io.stdout, signal: io.signal });
      if (result.interrupted) return interruptedExitCode(io.signal);
      const [before, after] = [reward(result, 0), reward(result, -1)];
      const tested =
        before !== undefined && after !== undefined && result.tests.length > 1
          ? `, test reward ${before.toFixed(4)} -> ${after.toFixed(4)}`
          : '';
      io.stdout.write(`done: ${result.step} steps${tested}, checkpoint ${result.checkpoint}\n`);
      return 0;
    });
}
