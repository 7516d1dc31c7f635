import { homedir } from 'node:os';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { resolveHubOptions } from './hub-options.js';

describe('resolveHubOptions', () => {
  it('defaults to huggingface.co and ~/.cache/huggingface/hub', () => {
    expect(resolveHubOptions({}, {})).toEqual({
      endpoint: 'https://huggingface.co',
      cacheDir: join(homedir(), '.cache', 'huggingface', 'hub'),
      offline: false,
    });
  });
  it('reads HF_ENDPOINT, HF_TOKEN, HF_HOME, HF_HUB_CACHE and HF_HUB_OFFLINE', () => {
    expect(
      resolveHubOptions(
        {},
        {
          HF_ENDPOINT: 'http://mirror:8080/',
          HF_TOKEN: 'hf_x',
          HF_HOME: '/h',
          HF_HUB_OFFLINE: '1',
        },
      ),
    ).toEqual({
      endpoint: 'http://mirror:8080',
      token: 'hf_x',
      cacheDir: '/h/hub',
      offline: true,
    });
    expect(resolveHubOptions({}, { HF_HOME: '/h', HF_HUB_CACHE: '/c' }).cacheDir).toBe('/c');
  });
  it('lets explicit options win over the environment', () => {
    expect(
      resolveHubOptions(
        { endpoint: 'http://a', token: 'hf_b', cacheDir: '/d', offline: false },
        { HF_ENDPOINT: 'http://e', HF_TOKEN: 'hf_f', HF_HUB_OFFLINE: '1' },
      ),
    ).toMatchObject({
      endpoint: 'http://a',
      token: 'hf_b',
      cacheDir: '/d',
      offline: false,
    });
  });
});
