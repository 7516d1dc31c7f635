import { readFile } from 'node:fs/promises';
import { DataError } from '../errors.js';
import type { HubOptions } from './hub-options.js';
import { resolveHubOptions } from './hub-options.js';
import { HubSnapshot, repoCacheDir } from './hub-snapshot.js';

/** Tokenizer files of a model repo, downloaded when the repo has them. */
export const HUB_TOKENIZER_FILES = [
  'tokenizer.json',
  'tokenizer_config.json',
  'special_tokens_map.json',
  'chat_template.jinja',
  'added_tokens.json',
  'vocab.json',
  'merges.txt',
] as const;

const INDEX = 'model.safetensors.index.json';

/** Options of `resolveHubModel`. */
export interface HubModelOptions extends HubOptions {
  /** Branch, tag or commit (default main). */
  revision?: string;
  /** Only the tokenizer files (what `loadTokenizer` needs), not config and weights. */
  tokenizerOnly?: boolean;
}

/**
 * The local folder of hub model `name` (`owner/name`): config.json, generation_config.json,
 * the tokenizer files and the safetensors weights (`model.safetensors`, or the index and the
 * shards it lists) downloaded into the standard HF cache (`models--owner--name/snapshots/<sha>`,
 * `refs/main`, `blobs/`) with byte progress, or taken from it with no network when they are
 * there and the hub cannot be reached or HF_HUB_OFFLINE is set. Honours HF_ENDPOINT, HF_TOKEN,
 * HF_HOME/HF_HUB_CACHE (see `resolveHubOptions`).
 */
export async function resolveHubModel(
  name: string,
  options: HubModelOptions = {},
): Promise<string> {
  const opts = resolveHubOptions(options);
  const snap = await HubSnapshot.open(name, 'model', options.revision ?? 'main', opts);
  if (!(snap instanceof HubSnapshot)) {
    throw new DataError(
      'HUB_UNREACHABLE',
      `Cannot load model "${name}": ${snap?.unreachable}, and nothing is cached ` +
        `under ${repoCacheDir(opts.cacheDir, 'model', name)}. Connect to the network (or set ` +
        `HF_ENDPOINT to a reachable mirror), or pass a local model folder.`,
    );
  }
  const need = async (path: string) => {
    if (snap.offlineReason === undefined && !snap.has(path)) {
      const what = path === INDEX ? 'model.safetensors or model.safetensors.index.json' : path;
      throw new DataError(
        'HUB_NOT_FOUND',
        `Model "${name}" on ${opts.endpoint} has no ${what}${what.includes('.safetensors') ? '; rl2 reads safetensors weights only' : ''}.`,
      );
    }
    return snap.download(path);
  };
  await need(options.tokenizerOnly ? 'tokenizer.json' : 'config.json');
  for (const file of [...HUB_TOKENIZER_FILES, 'generation_config.json'])
    if (snap.has(file)) await snap.download(file);
  if (options.tokenizerOnly) return snap.dir;
  const single =
    snap.has(INDEX) || !snap.has('model.safetensors') ? undefined : 'model.safetensors';
  if (single) {
    await need(single);
    return snap.dir;
  }
  const index = JSON.parse(await readFile(await need(INDEX), 'utf8')) as {
    weight_map?: Record<string, string>;
  };
  for (const shard of [...new Set(Object.values(index.weight_map ?? {}))].sort()) await need(shard);
  return snap.dir;
}
