import { DataError } from '../errors.js';
import { visibleSplits } from '../sources/select-split-files.js';
import type { HubOptions } from './hub-options.js';
import { resolveHubOptions } from './hub-options.js';
import { HubSnapshot, repoCacheDir } from './hub-snapshot.js';
import { selectHubFiles } from './select-hub-files.js';

const PARQUET_BRANCH = 'refs/convert/parquet';
const REVISIONS = [PARQUET_BRANCH, 'main'] as const;

/**
 * Local paths of the files of `split` of hub dataset `name`, downloading into the standard HF
 * cache (`datasets--owner--name/{blobs,snapshots/<sha>,refs/<revision>}`, the layout Python
 * `huggingface_hub` uses). Tries the `refs/convert/parquet` branch first, then the repo's own
 * data files on main. When the hub cannot be reached (or offline is set) the cache is used;
 * if nothing is cached either, HUB_UNREACHABLE says so.
 */
export async function resolveHubDataset(
  name: string,
  split: string,
  options: HubOptions = {},
): Promise<string[]> {
  const opts = resolveHubOptions(options);
  const seen: string[] = [];
  let offline: string | undefined;
  for (const revision of REVISIONS) {
    const snap = await HubSnapshot.open(name, 'dataset', revision, opts, {
      missingOk: revision === PARQUET_BRANCH,
    });
    if (snap === undefined) continue;
    if (!(snap instanceof HubSnapshot)) {
      offline = snap.unreachable;
      continue;
    }
    offline ??= snap.offlineReason;
    seen.push(...snap.files());
    const chosen = selectHubFiles(snap.files(), split, revision === PARQUET_BRANCH, opts.config);
    if (chosen.length === 0) continue;
    const files: string[] = [];
    for (const path of chosen) files.push(await snap.download(path));
    return files;
  }
  if (offline !== undefined) {
    throw new DataError(
      'HUB_UNREACHABLE',
      `Cannot load dataset "${name}" split "${split}": ${offline}, and nothing is cached ` +
        `under ${repoCacheDir(opts.cacheDir, 'dataset', name)}. Connect to the network (or set ` +
        `HF_ENDPOINT to a reachable mirror), or pass a local file/folder instead.`,
    );
  }
  const splits = visibleSplits(seen.map((p) => p.replace(/^[^/]+\/(?=[^/]+\/)/, '')));
  throw new DataError(
    'HUB_NOT_FOUND',
    `Dataset "${name}" on ${opts.endpoint} has no data files for split ` +
      `"${split}"${splits.length ? ` (splits found: ${splits.join(', ')}; write <split>@${name})` : ''}.`,
  );
}
