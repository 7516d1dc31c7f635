import { existsSync } from 'node:fs';
import { extname, resolve } from 'node:path';
import { pathToFileURL } from 'node:url';
import { RolloutError } from '../errors.js';
import { type EnvironmentOptions, createEnvironment } from './create-environment.js';
import type { EnvModule, Environment } from './environment.js';

const loadable = ['.ts', '.mts', '.cts', '.js', '.mjs', '.cjs'];

/**
 * Loads `rollout.env_path`: a .ts (run through tsx, no build step), .js or .mjs module that
 * exports `step` (and optionally `reset`), named or on the default export.
 */
export async function loadEnvironment(path: string, options: Omit<EnvironmentOptions, 'source'> = {}): Promise<Environment> {
  const file = resolve(path);
  const ext = extname(file);
  if (!loadable.includes(ext)) {
    throw new RolloutError('ENV_LOAD', `rollout.env_path "${path}" must end in ${loadable.join(', ')}`);
  }
  if (!existsSync(file)) {
    throw new RolloutError('ENV_LOAD', `rollout.env_path "${path}" does not exist (resolved to ${file})`);
  }
  const url = pathToFileURL(file).href;
  let mod: Record<string, unknown>;
  try {
    if (ext === '.ts' || ext === '.mts' || ext === '.cts') {
      const { tsImport } = await import('tsx/esm/api');
      mod = await tsImport(url, import.meta.url);
    } else {
      mod = await import(url);
    }
  } catch (e) {
    throw new RolloutError('ENV_LOAD', `cannot load rollout.env_path "${path}": ${(e as Error)?.message ?? String(e)}`, { cause: e });
  }
  const candidate = (typeof mod.step === 'function' ? mod : (mod.default ?? {})) as EnvModule;
  return createEnvironment(candidate, { ...options, source: path });
}
