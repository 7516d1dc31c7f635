import { readFileSync } from 'node:fs';
import { TrainersError, configLeaves, writeRandomCheckpoint, writeReport } from '@rl2/trainers';
import { type CAC, cac } from 'cac';
import type { CliIo } from './cli-io.js';
import { resolveTokenizerDir } from './commands/resolve-tokenizer-dir.js';
import {
  TRAINER_COMMANDS,
  type TrainerName,
  registerTrainerCommands,
  trainerHelp,
} from './commands/trainer-command.js';
import { registerServeCommand } from './commands/serve-command.js';
import { registerExportCommand } from './commands/export-command.js';
import { registerLaunchCommand } from './commands/launch-command.js';
import { planHelp, registerPlanCommand } from './commands/plan-command.js';
import { firstUnknownFlag, unknownFlagMessage } from './unknown-flag.js';

const { version } = JSON.parse(
  readFileSync(new URL('../package.json', import.meta.url), 'utf8'),
) as {
  version: string;
};

/** Builds the `rl2` command. Trainers and tools register their sub-commands here. */
export function createCli(io: CliIo = { stdout: process.stdout, stderr: process.stderr }) {
  const cli = cac('rl2');
  cli.usage('<command> [key=value ...]');

  registerTrainerCommands(cli, io);

  cli
    .command('init-model', 'write a randomly initialised Hugging Face checkpoint (no download)')
    .option('--arch <arch>', 'llama | qwen2 | qwen3', { default: 'qwen3' })
    .option(
      '--tokenizer <dir>',
      'tokenizer folder (tokenizer.json, tokenizer_config.json), or "qwen3" for the Qwen3 tokenizer',
    )
    .option('--out <dir>', 'output folder')
    .option('--hidden-size <n>', 'hidden size', { default: 64 })
    .option('--intermediate-size <n>', 'MLP size (default 2 x hidden)')
    .option('--layers <n>', 'decoder layers', { default: 2 })
    .option('--heads <n>', 'attention heads', { default: 4 })
    .option('--kv-heads <n>', 'key/value heads (default heads / 2)')
    .option('--head-dim <n>', 'per-head size (default hidden / heads)')
    .option('--max-position <n>', 'max_position_embeddings', { default: 2048 })
    .option(
      '--vocab-size <n>',
      'embedding rows (default the tokenizer size; pad to a multiple of tp_size for tensor parallelism)',
    )
    .option('--no-tie-word-embeddings', 'separate lm_head weights')
    .option('--seed <n>', 'initialisation seed', { default: 0 })
    .option('--dtype <dtype>', 'stored weights: float32 | bfloat16 | float16', {
      default: 'float32',
    })
    .option(
      '--max-shard-size <size>',
      'largest safetensors file: bytes, or 5GB, 500MB, 2GiB (as save_pretrained)',
      { default: '5GB' },
    )
    .example(
      'rl2 init-model --arch qwen3 --tokenizer examples/addition/tokenizer --out models/tiny',
    )
    .example(
      'rl2 init-model --tokenizer qwen3 --hidden-size 1024 --layers 28 --heads 16 --kv-heads 8 ' +
        '--head-dim 128 --intermediate-size 3072 --dtype bfloat16 --out models/qwen3-0.6b-shape',
    )
    .action((flags: Record<string, string | number | boolean | undefined>) => {
      if (!flags.out)
        throw new TrainersError(
          'INVALID_ARGUMENT',
          'rl2 init-model needs --out DIR (where to write the checkpoint)',
        );
      if (!flags.tokenizer)
        throw new TrainersError(
          'INVALID_ARGUMENT',
          'rl2 init-model needs --tokenizer DIR (a Hugging Face tokenizer folder) or --tokenizer qwen3',
        );
      const num = (k: string) => (flags[k] === undefined ? undefined : Number(flags[k]));
      const config = writeRandomCheckpoint({
        arch: String(flags.arch) as 'llama' | 'qwen2' | 'qwen3',
        tokenizerDir: resolveTokenizerDir(String(flags.tokenizer)),
        outDir: String(flags.out),
        hiddenSize: num('hiddenSize'),
        intermediateSize: num('intermediateSize'),
        numLayers: num('layers'),
        numHeads: num('heads'),
        numKvHeads: num('kvHeads'),
        headDim: num('headDim'),
        maxPositionEmbeddings: num('maxPosition'),
        vocabSize: num('vocabSize'),
        tieWordEmbeddings: flags.tieWordEmbeddings !== false,
        seed: num('seed'),
        dtype: String(flags.dtype),
        maxShardSize: String(flags.maxShardSize),
      });
      io.stdout.write(
        `wrote ${config.model_type} checkpoint to ${flags.out}: vocab ${config.vocab_size}, ` +
          `hidden ${config.hidden_size}, ${config.num_hidden_layers} ` +
          `layers, ${config.num_attention_heads} heads\n`,
      );
    });

  registerServeCommand(cli, io, version);
  registerExportCommand(cli, io);
  registerLaunchCommand(cli, io);
  registerPlanCommand(cli, io);

  cli
    .command(
      'report <run-dir>',
      'write RUN_DIR/report.html (loss and metric curves, opens offline)',
    )
    .action((runDir: string) => {
      io.stdout.write(`wrote ${writeReport(runDir)}\n`);
    });

  cli.help((sections) => {
    const name = cli.matchedCommandName as TrainerName | undefined;
    if (name && name in TRAINER_COMMANDS) sections.push({ body: trainerHelp(name) });
    if (cli.matchedCommandName === 'plan') sections.push({ body: planHelp() });
    return sections;
  });
  cli.version(version);
  return cli;
}

/** The message for the first flag in `argv` that the matched command does not have, if any. */
function unknownFlag(cli: CAC, argv: readonly string[]): string | undefined {
  const command = cli.matchedCommand;
  if (!command) return undefined;
  const options = [...cli.globalCommand.options, ...command.options];
  const flag = firstUnknownFlag(argv, new Set(options.flatMap((o) => o.names)));
  if (!flag) return undefined;
  const trainer = TRAINER_COMMANDS[command.name as TrainerName];
  return unknownFlagMessage(command.name, flag, trainer && configLeaves(trainer.schema));
}

/**
 * Runs `rl2` with `argv` (without node and script) and returns the exit code. Errors of
 * the library are printed as one line without a stack trace.
 */
export async function main(
  argv: readonly string[],
  io: CliIo = { stdout: process.stdout, stderr: process.stderr },
): Promise<number> {
  const cli = createCli(io);
  // cac prints help and version with console.info; route them to io.stdout for this call.
  const info = console.info;
  console.info = (...parts: unknown[]) => io.stdout.write(`${parts.join(' ')}\n`);
  try {
    cli.parse(['node', 'rl2', ...argv], { run: false });
    if (!cli.matchedCommand) {
      if (!cli.options.help && !cli.options.version) {
        if (argv.length > 0) io.stderr.write(`rl2: unknown command "${argv[0]}"\n`);
        cli.outputHelp();
        return argv.length > 0 ? 1 : 0;
      }
      return 0;
    }
    if (cli.options.help) return 0;
    // cac shows the version only without a command; `rl2 sft --version` is the same question
    if (cli.options.version) {
      cli.outputVersion();
      return 0;
    }
    const unknown = unknownFlag(cli, argv);
    if (unknown) {
      io.stderr.write(`rl2: ${unknown}\n`);
      return 1;
    }
    const code = await cli.runMatchedCommand();
    return typeof code === 'number' ? code : 0;
  } catch (err) {
    const e = err as Error;
    const known = e.name?.endsWith('Error') && 'code' in e;
    io.stderr.write(`rl2: ${known ? e.message : (e.stack ?? String(e))}\n`);
    return 1;
  } finally {
    console.info = info;
  }
}
