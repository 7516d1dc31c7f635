import { dataFileKind } from './read-data-file.js';

/** Files Python `datasets` keeps next to data but that are not data. */
const METADATA_FILES = new Set([
  'dataset_info.json',
  'state.json',
  'dataset_dict.json',
  'dataset_infos.json',
]);

/** True for a path that holds rows (a supported extension, not a datasets metadata file or a derived cache-*.arrow). */
export function isDataFile(path: string): boolean {
  const base = path.split('/').pop() ?? path;
  if (METADATA_FILES.has(base) || base.startsWith('.')) return false;
  if (base.startsWith('cache-') && base.endsWith('.arrow')) return false;
  return dataFileKind(path) !== undefined;
}

/** True when a path names `split`: a folder `split/`, or a file `split-*`, `split.*`, `*-split.*`, `*-split-*`, `*_split.*`. */
export function pathMatchesSplit(path: string, split: string): boolean {
  const segments = path.split('/');
  const base = (segments.pop() ?? '').toLowerCase();
  const s = split.toLowerCase();
  if (segments.some((seg) => seg.toLowerCase() === s)) return true;
  const stem = base.replace(/\.[a-z]+$/, '');
  return (
    stem === s ||
    new RegExp(`(^|[-_.])${s.replace(/[.*+?^${}()|[\]\\]/g, '\\$&')}($|[-_.])`).test(stem)
  );
}

/**
 * Chooses the files of `split` among relative data paths, as Python `datasets` infers splits:
 * paths naming the split; if none name any split and the split is train, all files.
 * Returns the sorted selection (empty when the split is not there).
 */
export function selectSplitFiles(paths: string[], split: string): string[] {
  const data = paths.filter(isDataFile).sort();
  const matching = data.filter((p) => pathMatchesSplit(p, split));
  if (matching.length > 0) return matching;
  const known = ['train', 'test', 'validation', 'valid', 'dev', 'eval'];
  const anySplit = data.some((p) => known.some((k) => pathMatchesSplit(p, k)));
  return split === 'train' && !anySplit ? data : [];
}

/** The split names visible in a list of paths, for error messages. */
export function visibleSplits(paths: string[]): string[] {
  const known = ['train', 'test', 'validation', 'valid', 'dev', 'eval'];
  return known.filter((k) => paths.some((p) => isDataFile(p) && pathMatchesSplit(p, k)));
}
