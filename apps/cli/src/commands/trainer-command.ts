import {
  type LoadConfigOptions,
  type PpoConfig,
  TrainersError,
  dpoConfigSchema,
  formatConfigHelp,
  loadConfig,
  ppoConfigSchema,
  rmConfigSchema,
  sftConfigSchema,
} from '@rl2/trainers';
import type { CAC } from 'cac';
import { stringify } from 'yaml';
import type { CliIo } from '../cli-io.js';
import { runPpoCommand } from './ppo-command.js';
import { runTrainerCommand } from './run-trainer.js';

/** The trainers `rl2` runs, with their config schemas, one-line descriptions and an example. */
export const TRAINER_COMMANDS = {
  sft: {
    schema: sftConfigSchema,
    summary: 'supervised fine-tuning on {prompt, response} or {messages} rows',
    example: 'rl2 sft --config examples/addition/sft.yaml trainer.n_epochs=2',
  },
  rm: {
    schema: rmConfigSchema,
    summary: 'Bradley-Terry reward model on {prompt|messages, chosen, rejected} rows',
    example: 'rl2 rm --config examples/addition/rm.yaml trainer.n_epochs=2',
  },
  dpo: {
    schema: dpoConfigSchema,
    summary: 'direct preference optimisation (DPO, IPO, SimPO) on preference pairs',
    example: 'rl2 dpo --config examples/addition/dpo.yaml trainer.n_epochs=2',
  },
  ppo: {
    schema: ppoConfigSchema,
    summary: 'PPO / GRPO on {prompt|messages, answer} rows with a reward env (rollout.env_path)',
    example: 'rl2 ppo --config examples/addition-grpo/grpo.yaml trainer.max_steps=10',
  },
} as const;

export type TrainerName = keyof typeof TRAINER_COMMANDS;

/** `--help` body for `rl2 <trainer>`: the config tree with defaults and docs. */
export function trainerHelp(name: TrainerName): string {
  return `Config (set with key=value, or in --config FILE.yaml; \${a.b} interpolates):\n${formatConfigHelp(TRAINER_COMMANDS[name].schema)}`;
}

/** What cac hands a trainer's action: `--config` once, several times or not at all; `--dry-run`; the words after `--`. */
export interface TrainerFlags {
  readonly config?: string | string[];
  readonly dryRun?: boolean | string;
  readonly '--'?: string[];
}

/**
 * The config sources of `rl2 <trainer> [--config F ...] [--dry-run] [key=value ...] [-- key=value ...]`:
 * the config files in order (a later file wins), then the overrides. cac reads `--dry-run`
 * as taking a value, so `--dry-run key=value` hands it the override; it goes back in front.
 */
export function trainerArguments(
  overrides: readonly string[],
  flags: TrainerFlags,
): { options: LoadConfigOptions; dryRun: boolean } {
  const files = flags.config === undefined ? [] : [flags.config].flat().map(String);
  const words = [
    ...(typeof flags.dryRun === 'string' ? [flags.dryRun] : []),
    ...overrides,
    ...(flags['--'] ?? []),
  ];
  return { options: { configFile: files, overrides: words }, dryRun: Boolean(flags.dryRun) };
}

/** Registers `rl2 sft|rm|dpo|ppo`: one parser path for every trainer. */
export function registerTrainerCommands(cli: CAC, io: CliIo): void {
  for (const name of Object.keys(TRAINER_COMMANDS) as TrainerName[]) {
    const { schema, summary, example } = TRAINER_COMMANDS[name];
    cli
      .command(`${name} [...overrides]`, summary)
      .usage(`${name} [--config FILE.yaml ...] [key=value ...]`)
      .option(
        '--config <file>',
        'YAML config file (repeat to merge several, a later one wins); key=value arguments override them',
      )
      .option('--dry-run', 'print the resolved config as YAML and exit')
      .example(example)
      .action(async (overrides: string[], flags: TrainerFlags) => {
        const { options, dryRun } = trainerArguments(overrides, flags);
        const config = loadConfig(schema, options);
        if (dryRun) {
          io.stdout.write(stringify(config));
          return 0;
        }
        return name === 'ppo'
          ? runPpoCommand(config as PpoConfig, io)
          : runTrainerCommand(name, config, io);
      });
  }
}

export { TrainersError };
