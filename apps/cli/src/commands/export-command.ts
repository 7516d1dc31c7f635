import { TrainersError, exportMerged } from '@rl2/trainers';
import type { CAC } from 'cac';
import type { CliIo } from '../cli-io.js';

const DTYPES = ['float32', 'bfloat16', 'float16'] as const;

/**
 * Registers `rl2 export --merge --adapter DIR --out DIR [--model BASE] [--dtype D]`: a PEFT LoRA
 * adapter merged into its base (W + s B A) as a plain Hugging Face folder.
 */
export function registerExportCommand(cli: CAC, io: CliIo): void {
  cli
    .command(
      'export',
      'write a LoRA adapter merged into its base model as a plain Hugging Face checkpoint',
    )
    .option('--merge', 'merge the adapter into the base weights (the only export there is)')
    .option('--adapter <dir>', "PEFT LoRA adapter folder, e.g. a LoRA checkpoint's step-N/adapter")
    .option(
      '--model <dir>',
      "base model folder or hub id (default: the adapter's base_model_name_or_path)",
    )
    .option('--out <dir>', 'output folder')
    .option('--dtype <dtype>', "saved weights: float32 | bfloat16 | float16 (default: the base's)")
    .example('rl2 export --merge --adapter runs/sft/latest/adapter --out runs/sft-merged')
    .action(async (flags: Record<string, string | boolean | undefined>) => {
      const need = (key: string, what: string) => {
        if (typeof flags[key] !== 'string' || flags[key] === '')
          throw new TrainersError('INVALID_ARGUMENT', `rl2 export needs ${what}`);
        return flags[key] as string;
      };
      if (!flags.merge)
        throw new TrainersError(
          'INVALID_ARGUMENT',
          'rl2 export needs --merge (it writes the adapter merged into its base)',
        );
      const adapter = need('adapter', '--adapter DIR (a PEFT LoRA adapter folder)');
      const out = need('out', '--out DIR (where the merged checkpoint goes)');
      const dtype = flags.dtype === undefined ? undefined : String(flags.dtype);
      if (dtype !== undefined && !(DTYPES as readonly string[]).includes(dtype))
        throw new TrainersError(
          'INVALID_ARGUMENT',
          `rl2 export --dtype ${dtype}: use ${DTYPES.join(', ')}`,
        );
      await exportMerged({
        adapter,
        out,
        ...(typeof flags.model === 'string' ? { model: flags.model } : {}),
        ...(dtype ? { dtype: dtype as (typeof DTYPES)[number] } : {}),
      });
      io.stdout.write(`wrote ${out} (${adapter} merged into its base)\n`);
      return 0;
    });
}
