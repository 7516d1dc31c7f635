import { readFile, stat } from 'node:fs/promises';
import { join } from 'node:path';
import { downloadFileToCacheDir } from '@huggingface/hub';
import { DataError } from '../errors.js';
import type { HubOptions } from '../hub/hub-options.js';
import { resolveHubOptions } from '../hub/hub-options.js';
import { createTokenizer } from './create-tokenizer.js';
import type { Tokenizer } from './tokenizer.js';

/**
 * Loads a tokenizer from a folder holding tokenizer.json + tokenizer_config.json (+ optional
 * chat_template.jinja), or, when `pathOrRepo` is not a folder, from a hub model repo (the files
 * go to the HF cache).
 */
export async function loadTokenizer(pathOrRepo: string, hub: HubOptions = {}): Promise<Tokenizer> {
  const isDir = await stat(pathOrRepo).then((s) => s.isDirectory(), () => false);
  const read = isDir ? (name: string) => readFile(join(pathOrRepo, name), 'utf8') : await hubReader(pathOrRepo, hub);
  let tokenizerJson: string;
  try {
    tokenizerJson = await read('tokenizer.json');
  } catch (e) {
    if (e instanceof DataError) throw e;
    throw new DataError('TOKENIZER', `No tokenizer.json in ${pathOrRepo}. Point the tokenizer path at a Hugging Face model folder (tokenizer.json + tokenizer_config.json).`, { cause: e });
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
    throw new DataError('TOKENIZER', `Cannot build the tokenizer in ${pathOrRepo}: ${(e as Error).message}.`, { cause: e });
  }
}

async function hubReader(repo: string, hub: HubOptions): Promise<(name: string) => Promise<string>> {
  const opts = resolveHubOptions(hub);
  if (!/^[\w.-]+(\/[\w.-]+)?$/.test(repo)) throw new DataError('TOKENIZER', `Tokenizer path ${repo} is neither a folder nor a hub model id.`);
  return async (name) => {
    const path = await downloadFileToCacheDir({
      repo: { type: 'model', name: repo },
      path: name,
      hubUrl: opts.endpoint,
      cacheDir: opts.cacheDir,
      ...(opts.token ? { accessToken: opts.token } : {}),
      ...(opts.fetch ? { fetch: opts.fetch } : {}),
    });
    return readFile(path, 'utf8');
  };
}
