import { type ConfigLeaf, closestKey, editDistance } from '@rl2/trainers';

/** Flags of other trainers (Hugging Face, TRL) and the rl2 key leaf they mean. */
const FLAG_ALIASES: Record<string, string> = {
  model_name_or_path: 'model_name',
  learning_rate: 'lr',
  num_train_epochs: 'n_epochs',
  output_dir: 'save_dir',
  per_device_train_batch_size: 'batch_size',
  max_seq_length: 'max_length',
};

/** A word of argv that is a flag: its name without dashes and the value written with it or after it. */
export interface WrittenFlag {
  /** As written, dashes included (`--max-steps`, `-c`). */
  readonly flag: string;
  readonly name: string;
  readonly value?: string;
}

const camel = (name: string) => name.replace(/-([a-z])/g, (_, c: string) => c.toUpperCase());

/**
 * The first flag in `argv` (before a `--`) that is none of `known` (the command's option names
 * as cac keeps them, camelCase), as the user wrote it: cac reports `--max-steps` as `--maxSteps`.
 */
export function firstUnknownFlag(
  argv: readonly string[],
  known: ReadonlySet<string>,
): WrittenFlag | undefined {
  const end = argv.includes('--') ? argv.indexOf('--') : argv.length;
  for (let i = 0; i < end; i++) {
    const word = argv[i] as string;
    if (!word.startsWith('-') || word === '-' || /^-\d/.test(word)) continue;
    const [written, ...rest] = word.replace(/^--?/, '').split('=');
    const name = (written as string).replace(/^no-/, '');
    if (known.has(camel(name)) || known.has(name)) continue;
    const next = argv[i + 1];
    const value =
      rest.length > 0
        ? rest.join('=')
        : next !== undefined && !next.startsWith('-') && !next.includes('=')
          ? next
          : undefined;
    const flag = `${word.startsWith('--') ? '--' : '-'}${written}`;
    return { flag, name: written as string, ...(value !== undefined ? { value } : {}) };
  }
  return undefined;
}

/**
 * The config key a flag most likely means (`--lr` -> `actor.lr`, `--model_name_or_path` ->
 * `actor.model_name`, `--max-steps` -> `trainer.max_steps`): a leaf ending in its name, else a
 * leaf whose last part is within two edits of it (one per three letters).
 */
export function configKeyForFlag(name: string, leaves: readonly ConfigLeaf[]): string | undefined {
  const snake = name.toLowerCase().replace(/-/g, '_');
  const tail = FLAG_ALIASES[snake] ?? snake;
  const keys = leaves.map((l) => l.key);
  const exact = keys.find((k) => k === tail || k.endsWith(`.${tail}`));
  if (exact) return exact;
  const near = closestKey(tail, keys);
  const edits = near ? editDistance(tail, near.slice(near.lastIndexOf('.') + 1)) : Infinity;
  return edits <= Math.min(2, Math.floor(tail.length / 3)) ? near : undefined;
}

/** The one line `rl2 <command>` prints for a flag it does not have. */
export function unknownFlagMessage(
  command: string,
  flag: WrittenFlag,
  leaves?: readonly ConfigLeaf[],
): string {
  if (!leaves) return `unknown option ${flag.flag} (rl2 ${command} --help lists the options)`;
  const key = configKeyForFlag(flag.name, leaves);
  const example = key ? `${key}=${flag.value ?? '...'}` : 'e.g. trainer.max_steps=10';
  return `unknown option ${flag.flag}; config keys are set as key=value: ${example} (rl2 ${command} --help lists every key)`;
}
