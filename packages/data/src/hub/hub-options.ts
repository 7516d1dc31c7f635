import type { DownloadProgress } from './download-progress.js';
import { homedir } from 'node:os';
import { join } from 'node:path';

/** How to reach the Hugging Face hub and where its cache lives. Every field defaults from the environment. */
export interface HubOptions {
  /** Hub URL; default HF_ENDPOINT, else https://huggingface.co. */
  endpoint?: string;
  /** Access token for private/gated repos; default HF_TOKEN (or HUGGING_FACE_HUB_TOKEN). */
  token?: string;
  /** Hub cache folder; default HF_HUB_CACHE, else $HF_HOME/hub, else ~/.cache/huggingface/hub. */
  cacheDir?: string;
  /** Use only the cache, never the network; default true when HF_HUB_OFFLINE=1. */
  offline?: boolean;
  /** Dataset config (subset) on the parquet branch; default "default", else the first one. */
  config?: string;
  /** fetch to use (tests, proxies). */
  fetch?: typeof fetch;
  /** Bytes received per downloaded file (see `downloadProgressLines` for printable lines). */
  onProgress?: (progress: DownloadProgress) => void;
}

/** HubOptions with every default filled in from `env`. */
export interface ResolvedHubOptions
  extends Required<Omit<HubOptions, 'token' | 'config' | 'fetch' | 'onProgress'>> {
  token?: string;
  config?: string;
  fetch?: typeof fetch;
  onProgress?: (progress: DownloadProgress) => void;
}

/** Fills HubOptions defaults from the environment (HF_ENDPOINT, HF_TOKEN, HF_HUB_CACHE, HF_HOME, HF_HUB_OFFLINE). */
export function resolveHubOptions(
  options: HubOptions = {},
  env: NodeJS.ProcessEnv = process.env,
): ResolvedHubOptions {
  const home = env.HF_HOME ?? join(env.XDG_CACHE_HOME ?? join(homedir(), '.cache'), 'huggingface');
  const token = options.token ?? env.HF_TOKEN ?? env.HUGGING_FACE_HUB_TOKEN;
  return {
    endpoint: (options.endpoint ?? env.HF_ENDPOINT ?? 'https://huggingface.co').replace(/\/+$/, ''),
    cacheDir:
      options.cacheDir ?? env.HF_HUB_CACHE ?? env.HUGGINGFACE_HUB_CACHE ?? join(home, 'hub'),
    offline:
      options.offline ?? ['1', 'true', 'yes'].includes((env.HF_HUB_OFFLINE ?? '').toLowerCase()),
    ...(token ? { token } : {}),
    ...(options.config ? { config: options.config } : {}),
    ...(options.fetch ? { fetch: options.fetch } : {}),
    ...(options.onProgress ? { onProgress: options.onProgress } : {}),
  };
}
