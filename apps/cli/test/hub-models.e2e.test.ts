import { existsSync, readdirSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import { tempDir } from '@rl2/vitest-config/temp-dir';
import { afterAll, beforeAll, describe, expect, it, vi } from 'vitest';
// the local fake hub of @rl2/data's hub tests
import { startFakeHub } from '../../../packages/data/test/hub-server.js';
import { EXAMPLE_TOKENIZER, rl2, tmp, writeTinyData } from './helpers.js';

const SHA = 'f'.repeat(40);
const saved = { ...process.env };
let hub: Awaited<ReturnType<typeof startFakeHub>>;
let data: ReturnType<typeof writeTinyData>;
const freshCache = () => tempDir('rl2-cli-hf-');

beforeAll(async () => {
  vi.spyOn(console, 'debug').mockImplementation(() => {}); // @huggingface/hub logs each download
  const dir = tmp('hub');
  const model = join(dir, 'model');
  data = writeTinyData(dir);
  const made = await rl2([
    'init-model',
    '--tokenizer',
    EXAMPLE_TOKENIZER,
    '--out',
    model,
    '--hidden-size',
    '16',
    '--layers',
    '1',
    '--heads',
    '2',
    '--max-shard-size',
    '4KB',
  ]);
  expect(made.code, made.stderr).toBe(0);
  const files = Object.fromEntries(
    readdirSync(model).map((f) => [f, new Uint8Array(readFileSync(join(model, f)))]),
  );
  hub = await startFakeHub({
    'rl2/tiny-qwen3': { token: 'hf_cli_token', revisions: { main: { sha: SHA, files } } },
  });
  Object.assign(process.env, {
    HF_ENDPOINT: hub.url,
    HF_TOKEN: 'hf_cli_token',
    HF_HUB_CACHE: freshCache(),
  });
  delete process.env.HF_HUB_OFFLINE;
});
afterAll(async () => {
  process.env = saved;
  await hub.close();
});

const sft = (model: string, saveDir: string) => [
  'sft',
  `actor.model_name=${model}`,
  `data.train.path=${data.sftTrain}`,
  'data.test_ratio=0',
  'data.train.batch_size=8',
  'trainer.max_steps=1',
  `trainer.save_dir=${saveDir}`,
  'trainer.progress=lines',
  'trainer.threads=1',
  'trainer.report=false',
  'actor.max_length_per_device=64',
];

describe('hub model names (HF_ENDPOINT, HF_TOKEN, HF_HUB_CACHE)', () => {
  it('rl2 sft actor.model_name=owner/name downloads into the HF cache, saves a full model folder, then runs from the cache', async () => {
    const run = tmp('hub-sft');
    const r = await rl2(sft('rl2/tiny-qwen3', run));
    expect(r.code, r.stderr).toBe(0);
    const snapshot = join(
      process.env.HF_HUB_CACHE as string,
      'models--rl2--tiny-qwen3',
      'snapshots',
      SHA,
    );
    expect(existsSync(join(snapshot, 'model.safetensors.index.json'))).toBe(true);
    for (const f of ['config.json', 'model.safetensors', 'tokenizer.json', 'tokenizer_config.json'])
      expect(existsSync(join(run, 'step-1', 'model', f)), f).toBe(true);
    const requests = hub.log.requests.length;
    process.env.HF_HUB_OFFLINE = '1';
    const offline = await rl2(sft('rl2/tiny-qwen3', tmp('hub-sft-offline')));
    delete process.env.HF_HUB_OFFLINE;
    expect(offline.code, offline.stderr).toBe(0);
    expect(hub.log.requests.length).toBe(requests);
  });

  it('rl2 serve --model owner/name shows the download and serves it', async () => {
    process.env.HF_HUB_CACHE = freshCache();
    const controller = new AbortController();
    const serving = rl2(['serve', '--model', 'rl2/tiny-qwen3', '--port', '0', '--threads', '1'], {
      signal: controller.signal,
      onStdout: (t) => t.includes('ready: ') && controller.abort(),
    });
    const r = await serving;
    expect(r.code, r.stderr).toBe(0);
    expect(r.stdout).toMatch(
      /downloaded rl2\/tiny-qwen3\/model-00001-of-0000\d\.safetensors \([\d.]+ kB in/,
    );
    expect(r.stdout).toContain('ready: http://127.0.0.1:');
  });

  it('an unreachable hub with nothing cached is a clear error naming the key', async () => {
    process.env.HF_HUB_CACHE = freshCache();
    process.env.HF_ENDPOINT = 'http://127.0.0.1:9';
    const r = await rl2(sft('rl2/tiny-qwen3', tmp('hub-down')));
    process.env.HF_ENDPOINT = hub.url;
    expect(r.code).toBe(1);
    expect(r.stderr).toContain('actor.model_name=rl2/tiny-qwen3');
    expect(r.stderr).toContain('the hub at http://127.0.0.1:9 cannot be reached');
    expect(r.stderr).toContain(
      `nothing is cached under ${join(process.env.HF_HUB_CACHE, 'models--rl2--tiny-qwen3')}`,
    );
  });
});
