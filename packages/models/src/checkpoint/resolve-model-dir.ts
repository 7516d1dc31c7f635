import { existsSync, statSync } from 'node:fs';
import { type HubModelOptions, resolveHubModel } from '@rl2/data';
import { ModelsError } from '../errors.js';
import { recoverInterruptedSave } from '../atomic/atomic-dir.js';

/** A hub model id (`owner/name` or `name`), as opposed to a path. */
const HUB_ID = /^[A-Za-z0-9][\w.-]*(\/[\w.-]+)?$/;

/**
 * The local folder of a model: `nameOrDir` itself when it is a folder (one whose save was
 * killed mid-swap is put back first), else a Hugging Face hub id (`Qwen/Qwen3-0.6B`) resolved
 * through the HF cache by @rl2/data's `resolveHubModel` (download with progress, offline reuse,
 * HF_ENDPOINT/HF_TOKEN/HF_HUB_OFFLINE).
 */
export async function resolveModelDir(
  nameOrDir: string,
  hub: HubModelOptions = {},
): Promise<string> {
  if (existsSync(nameOrDir) || recoverInterruptedSave(nameOrDir)) {
    if (!statSync(nameOrDir).isDirectory())
      throw new ModelsError(
        'CHECKPOINT_ERROR',
        `${nameOrDir} is a file; pass a Hugging Face model folder or a hub id such as Qwen/Qwen3-0.6B`,
      );
    return nameOrDir;
  }
  if (!HUB_ID.test(nameOrDir) || nameOrDir.startsWith('.')) {
    throw new ModelsError(
      'CHECKPOINT_ERROR',
      `${nameOrDir}: no such folder; pass a Hugging Face model folder or a hub id such as Qwen/Qwen3-0.6B`,
    );
  }
  return resolveHubModel(nameOrDir, hub);
}
