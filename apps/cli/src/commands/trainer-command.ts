import {
  type LoadConfigOptions,
  TrainersError,
  dpoConfigSchema,
  formatConfigHelp,
  loadConfig,
  rmConfigSchema,
  sftConfigSchema,
} from '@rl2/trainers';
import { stringify } from 'yaml';
import type { CliIo } from '../cli-io.js';

/** The trainers `rl2` runs, with their config schemas and one-line descriptions. */
export const TRAINER_COMMANDS = {
  sft: {
    schema: sftConfigSchema,
    summary: 'supervised fine-tuning on {prompt, response} or {messages} rows',
  },
  rm: {
    schema: rmConfigSchema,
    summary: 'Bradley-Terry reward model on {prompt|messages, chosen, rejected} rows',
  },
  dpo: {
    schema: dpoConfigSchema,
    summary: 'direct preference optimisation (DPO, IPO, SimPO) on preference pairs',
  },
} as const;

export type TrainerName = keyof typeof TRAINER_COMMANDS;

/** `--help` body for `rl2 <trainer>`: the config tree with defaults and docs. */
export function trainerHelp(name: TrainerName): string {
  return `Config (set with key=value, or in --config FILE.yaml; \${a.b} interpolates):\n${formatConfigHelp(TRAINER_COMMANDS[name].schema)}`;
}

/** Loads and validates the config of `rl2 <trainer>`; with `dryRun` prints it as YAML. */
export function resolveTrainerConfig(name: TrainerName, options: LoadConfigOptions) {
  return loadConfig(TRAINER_COMMANDS[name].schema, options);
}

/** Prints the resolved config (rl2 <trainer> --dry-run). */
export function printConfig(io: CliIo, config: unknown): void {
  io.stdout.write(stringify(config));
}

export { TrainersError };
