import { readdir, readFile, stat } from 'node:fs/promises';
import { join, relative } from 'node:path';
import { DataError } from '../errors.js';
import { fileError } from './file-error.js';
import { selectSplitFiles, visibleSplits } from './select-split-files.js';

/**
 * The data files of `split` under a local path:
 * - a file: itself, as the train split; another split throws (as `datasets` does with
 *   `load_dataset('json', data_files=FILE, split='test')`: "Unknown split");
 * - a `save_to_disk` DatasetDict folder (dataset_dict.json): the split's subfolder;
 * - a `save_to_disk` Dataset folder (state.json): its `_data_files` in order;
 * - any other folder: its data files (recursively) whose path names the split, or all for train.
 */
export async function resolveLocalFiles(path: string, split: string): Promise<string[]> {
  let info: Awaited<ReturnType<typeof stat>>;
  try {
    info = await stat(path);
  } catch (e) {
    throw fileError(path, e);
  }
  if (info.isFile()) {
    if (split !== 'train') throw splitOfFile(path, split);
    return [path];
  }
  const dict = await readJsonIfExists(join(path, 'dataset_dict.json'));
  if (dict) {
    const splits = Array.isArray((dict as { splits?: unknown }).splits)
      ? (dict as { splits: string[] }).splits
      : [];
    if (!splits.includes(split)) {
      throw new DataError(
        'INVALID_ARGUMENT',
        `Split "${split}" is not in ${path} (dataset_dict.json lists ${splits.join(', ') || 'no splits'}). Write it as <split>@${path}.`,
      );
    }
    return resolveLocalFiles(join(path, split), split);
  }
  const state = await readJsonIfExists(join(path, 'state.json'));
  const listed = (state as { _data_files?: { filename?: string }[] } | undefined)?._data_files;
  if (Array.isArray(listed) && listed.length > 0)
    return listed.map((f) => join(path, String(f.filename)));
  const all = (await listFiles(path)).map((f) => relative(path, f).split('\\').join('/'));
  const chosen = selectSplitFiles(all, split);
  if (chosen.length === 0) {
    const splits = visibleSplits(all);
    throw new DataError(
      all.length === 0 ? 'EMPTY_DATASET' : 'INVALID_ARGUMENT',
      all.length === 0
        ? `Folder ${path} holds no data files (.jsonl, .json, .csv, .parquet, .arrow).`
        : `No files for split "${split}" ` +
            `in ${path}${splits.length ? ` (splits found: ${splits.join(', ')})` : ''}. Name ` +
            `files like ${split}-00000.parquet or put them in ${split}/.`,
    );
  }
  return chosen.map((f) => join(path, f));
}

/** A lone file holds only the train split: say where other splits come from. */
function splitOfFile(path: string, split: string): DataError {
  return new DataError(
    'INVALID_ARGUMENT',
    `Split "${split}" does not apply to the file ${path}: a single file holds only the train ` +
      `split (as in Hugging Face datasets). Give the file without "${split}@" to read all of ` +
      `it, or pick a split of a folder (files named ${split}-*.jsonl or under ${split}/) or of ` +
      'a hub dataset.',
  );
}

async function listFiles(dir: string): Promise<string[]> {
  const out: string[] = [];
  for (const entry of await readdir(dir, { withFileTypes: true })) {
    const full = join(dir, entry.name);
    if (entry.isDirectory()) out.push(...(await listFiles(full)));
    else if (entry.isFile() || entry.isSymbolicLink()) out.push(full);
  }
  return out;
}

async function readJsonIfExists(file: string): Promise<unknown> {
  try {
    return JSON.parse(await readFile(file, 'utf8'));
  } catch (e) {
    if ((e as { code?: string }).code === 'ENOENT') return undefined;
    throw new DataError('UNREADABLE_FILE', `Cannot read ${file}: ${(e as Error).message}.`, {
      cause: e,
    });
  }
}
