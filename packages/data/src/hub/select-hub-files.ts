import { selectSplitFiles } from '../sources/select-split-files.js';

/** The parquet-branch configs present in a file list (`{config}/...`). */
export function parquetConfigs(paths: string[]): string[] {
  return [
    ...new Set(
      paths
        .filter((p) => p.endsWith('.parquet') && p.includes('/'))
        .map((p) => p.split('/')[0] as string),
    ),
  ].sort();
}

/**
 * Picks the files of `split` in a hub repo listing. On the `refs/convert/parquet` branch the
 * layout is `{config}/{split}/NNNN.parquet` (or older `{config}/{name}-{split}.parquet`): the
 * config is `config`, else "default", else the first. On a repo's own branch, the data files
 * whose path names the split (or all of them for train when none names a split).
 */
export function selectHubFiles(
  paths: string[],
  split: string,
  parquetBranch: boolean,
  config?: string,
): string[] {
  if (!parquetBranch) return selectSplitFiles(paths, split);
  const configs = parquetConfigs(paths);
  const chosen = config ?? (configs.includes('default') ? 'default' : configs[0]);
  if (chosen === undefined) return [];
  const inConfig = paths.filter((p) => p.startsWith(`${chosen}/`) && p.endsWith('.parquet'));
  const exact = inConfig.filter((p) =>
    [split, `partial-${split}`].includes(p.split('/')[1] as string),
  );
  return exact.length > 0
    ? exact.sort()
    : selectSplitFiles(
        inConfig.map((p) => p.slice(chosen.length + 1)),
        split,
      ).map((p) => `${chosen}/${p}`);
}
