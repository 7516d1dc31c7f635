import { existsSync } from 'node:fs';
import { extname, resolve } from 'node:path';
import { RolloutError } from '../errors.js';
import { createEnvironment } from './create-environment.js';
import { EnvWorkerPool } from './env-worker-pool.js';
import type { EnvModule, Environment, RolloutPrompt } from './environment.js';

const loadable = ['.ts', '.mts', '.cts', '.js', '.mjs', '.cjs'];

export interface LoadEnvironmentOptions {
  /** Limit on one `step` or `reset` call, ms (rollout.env_timeout_s). Default 60000; 0 disables it. */
  timeoutMs?: number;
  /** Worker threads the env runs in (rollout.env_workers). Default 1. */
  workers?: number;
}

/**
 * Loads `rollout.env_path`: a .ts (run through tsx, no build step), .js or .mjs module that
 * exports `step` (and optionally `reset`), named or on the default export. The module runs in
 * worker threads (see EnvWorkerPool): a call past the time limit fails with ENV_TIMEOUT even
 * when it blocks its thread, and the main thread stays free. Module state lives in each worker;
 * arguments and results are copied between threads (plain data). `close()` stops the workers.
 */
export async function loadEnvironment(
  path: string,
  options: LoadEnvironmentOptions = {},
): Promise<Environment> {
  const file = resolve(path);
  const ext = extname(file);
  if (!loadable.includes(ext)) {
    throw new RolloutError(
      'ENV_LOAD',
      `rollout.env_path "${path}" must end in ${loadable.join(', ')}`,
    );
  }
  if (!existsSync(file)) {
    throw new RolloutError(
      'ENV_LOAD',
      `rollout.env_path "${path}" does not exist (resolved to ${file})`,
    );
  }
  const workers = options.workers ?? 1;
  if (!Number.isInteger(workers) || workers < 1)
    throw new RolloutError(
      'INVALID_ARGUMENT',
      `rollout.env_workers must be an integer >= 1, got ${workers}`,
    );
  const ts = ext === '.ts' || ext === '.mts' || ext === '.cts';
  const { pool, hasStep, hasReset } = await EnvWorkerPool.start({
    file,
    ...(ts ? { tsxApi: import.meta.resolve('tsx/esm/api') } : {}),
    workers,
    timeoutMs: options.timeoutMs ?? 60_000,
    source: path,
  });
  const module = {
    ...(hasStep
      ? {
          step: (state: string, action: string, answer: unknown) =>
            pool.call('step', [state, action, answer]),
        }
      : {}),
    ...(hasReset ? { reset: (prompt: RolloutPrompt) => pool.call('reset', [prompt]) } : {}),
  } as EnvModule;
  let env: Environment;
  try {
    // the pool enforces the time limit (it can stop a blocked worker): none on top
    env = createEnvironment(module, { timeoutMs: 0, source: path });
  } catch (e) {
    await pool.close();
    throw e;
  }
  return { ...env, close: () => pool.close() };
}
