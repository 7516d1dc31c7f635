import { existsSync } from 'node:fs';
import { DataError } from '../errors.js';
import type { HubOptions } from '../hub/hub-options.js';
import { resolveHubDataset } from '../hub/resolve-hub-dataset.js';
import { parseDataSpec } from './parse-data-spec.js';
import { readDataFileBatches } from './read-data-file.js';
import { resolveLocalFiles } from './resolve-local-files.js';
import type { BadRowPolicy, LoadStats } from './row.js';
import { emptyStats } from './row.js';
import type { RowWithOrigin } from './row-with-origin.js';

/** Options for {@link openDataset} and {@link loadDataset}. */
export interface OpenDatasetOptions {
  /** Split when the spec has no `split@` prefix (default train). */
  split?: string;
  /** A row that does not parse: fail (default) or count it in stats and skip. */
  onBadRow?: BadRowPolicy;
  /**
   * Added to the error of a row that does not parse: how the caller turns skipping on.
   * Default "Or load with onBadRow: 'skip' to count and skip such rows." (a CLI names its own key).
   */
  badRowHint?: string;
  /** Hub endpoint, token and cache (defaults from HF_ENDPOINT, HF_TOKEN, HF_HUB_CACHE/HF_HOME). */
  hub?: HubOptions;
}

/** A dataset ready to stream: the files of one split, read lazily in order. */
export interface DatasetStream {
  split: string;
  files: string[];
  /** Filled while `rows()` is consumed: rows read and rows skipped (with reasons). */
  stats: LoadStats;
  /** Rows one by one, file after file. */
  rows(): AsyncGenerator<RowWithOrigin>;
  /** The same rows in batches (up to a few thousand rows each): fewer async steps, faster. */
  batches(): AsyncGenerator<RowWithOrigin[]>;
}

/** True when `path` looks like a hub id (`name` or `owner/name`, no extension) rather than a file. */
export function looksLikeHubId(path: string): boolean {
  return (
    /^[A-Za-z0-9][\w.-]*(\/[\w.-]+)?$/.test(path) &&
    !/\.(jsonl|ndjson|json|csv|parquet|arrow)$/i.test(path)
  );
}

/**
 * Resolves `spec` (a file, a folder of shards, a `datasets` save_to_disk folder, or a hub
 * dataset id, each optionally prefixed `split@`) to its files and returns a lazy row stream.
 */
export async function openDataset(
  spec: string,
  options: OpenDatasetOptions = {},
): Promise<DatasetStream> {
  const { split, path } = parseDataSpec(spec, options.split ?? 'train');
  if (path.trim() === '')
    throw new DataError(
      'INVALID_ARGUMENT',
      `Empty data path in "${spec}". Give a file, a folder or a Hugging Face dataset id.`,
    );
  let files: string[];
  if (existsSync(path) || !looksLikeHubId(path)) files = await resolveLocalFiles(path, split);
  else files = await resolveHubDataset(path, split, options.hub);
  const stats = emptyStats();
  stats.files = files;
  const onBadRow = options.onBadRow ?? 'error';
  const hint = options.badRowHint ?? "Or load with onBadRow: 'skip' to count and skip such rows.";
  async function* batches(): AsyncGenerator<RowWithOrigin[]> {
    try {
      for (const file of files) {
        for await (const batch of readDataFileBatches(file, stats, onBadRow)) {
          stats.rowsRead += batch.length;
          yield batch;
        }
      }
    } catch (e) {
      if (e instanceof DataError && e.skippable)
        throw new DataError(e.code, `${e.message} ${hint}`, { cause: e });
      throw e;
    }
  }
  async function* rows(): AsyncGenerator<RowWithOrigin> {
    for await (const batch of batches()) yield* batch;
  }
  return { split, files, stats, rows, batches };
}
