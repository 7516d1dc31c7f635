import { readFile, stat } from 'node:fs/promises';
import { join } from 'node:path';
import { DataError } from '../errors.js';
import type { HubOptions } from '../hub/hub-options.js';
import { resolveHubModel } from '../hub/resolve-hub-model.js';
import { createTokenizer } from './create-tokenizer.js';
import type { Tokenizer } from './tokenizer.js';

/**
 * Loads a tokenizer from a folder holding tokenizer.json + tokenizer_config.json (+ optional
 * chat_template.jinja), or, when `pathOrRepo` is not a folder, from a hub model repo (its
 * tokenizer files go to the HF cache, see `resolveHubModel`).
 */
export async function loadTokenizer(pathOrRepo: string, hub: HubOptions = {}): Promise<Tokenizer> {
  const isDir = await stat(pathOrRepo).then(
    (s) => s.isDirectory(),
    () => false,
  );
  if (!isDir && !/^[\w.-]+(\/[\w.-]+)?$/.test(pathOrRepo))
    throw new DataError(
      'TOKENIZER',
      `Tokenizer path ${pathOrRepo} is neither a folder nor a hub model id.`,
    );
  const dir = isDir
    ? pathOrRepo
    : await resolveHubModel(pathOrRepo, { ...hub, tokenizerOnly: true });
  const read = (name: string) => readFile(join(dir, name), 'utf8');
  let tokenizerJson: string;
  try {
    tokenizerJson = await read('tokenizer.json');
  } catch (e) {
    if (e instanceof DataError) throw e;
    throw new DataError(
      'TOKENIZER',
      `No tokenizer.json in ${pathOrRepo}. Point the tokenizer path at a Hugging Face model ` +
        `folder (tokenizer.json + tokenizer_config.json).`,
      { cause: e },
    );
  }
  const config = await read('tokenizer_config.json').catch(() => '{}');
  const template = await read('chat_template.jinja').catch(() => undefined);
  try {
    return createTokenizer({
      tokenizerJson: JSON.parse(tokenizerJson),
      tokenizerConfig: JSON.parse(config),
      ...(template !== undefined ? { chatTemplate: template } : {}),
      source: pathOrRepo,
    });
  } catch (e) {
    if (e instanceof DataError) throw e;
    throw new DataError(
      'TOKENIZER',
      `Cannot build the tokenizer in ${pathOrRepo}: ${(e as Error).message}.`,
      { cause: e },
    );
  }
}
