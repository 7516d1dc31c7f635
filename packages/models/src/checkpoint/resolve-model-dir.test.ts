import { readdirSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import { tempDir } from '@rl2/vitest-config/temp-dir';
import { afterAll, beforeAll, describe, expect, it, vi } from 'vitest';
// the local fake hub @rl2/data's hub tests use (one hub module, one fake)
import { startFakeHub } from '../../../data/test/hub-server.js';
import { initEngine } from '@rl2/engine';
import { disposeParams } from '../model/param-map.js';
import { loadModel } from './load-checkpoint.js';

const FIX = join(import.meta.dirname, '..', '..', 'fixtures');
const FOLDER = join(FIX, 'ts-written', 'llama@bf16-sharded');
let hub: Awaited<ReturnType<typeof startFakeHub>>;
const cacheDir = tempDir('rl2-hf-models-');

beforeAll(async () => {
  vi.spyOn(console, 'debug').mockImplementation(() => {});
  await initEngine({ backend: 'cpu', logger: () => {} });
  const files = Object.fromEntries(
    readdirSync(FOLDER).map((f) => [f, new Uint8Array(readFileSync(join(FOLDER, f)))]),
  );
  hub = await startFakeHub({
    'rl2/llama-bf16': { revisions: { main: { sha: 'e'.repeat(40), files } } },
  });
});
afterAll(() => hub.close());

describe('loadModel with a hub id', () => {
  it('downloads the sharded bf16 checkpoint into the HF cache and loads what the folder loads; then offline', async () => {
    const progress: string[] = [];
    const hubOptions = {
      endpoint: hub.url,
      cacheDir,
      onProgress: (p: { file: string; done: boolean }) => p.done && progress.push(p.file),
    };
    const { model } = await loadModel('rl2/llama-bf16', { hub: hubOptions });
    const { model: local } = await loadModel(FOLDER);
    for (const [name, p] of local.params)
      expect(model.params.get(name)!.dataSync(), name).toEqual(p.dataSync());
    expect(progress).toContain('model-00012-of-00012.safetensors');
    const offline = await loadModel('rl2/llama-bf16', { hub: { cacheDir, offline: true } });
    expect(offline.model.config.family).toBe('llama');
    for (const m of [model, local, offline.model]) disposeParams(m.params);
  });

  it('a path that does not exist is not sent to the hub', async () => {
    await expect(loadModel('./runs/nope/step-3/model')).rejects.toThrow(
      './runs/nope/step-3/model: no such folder; pass a Hugging Face model folder or a hub id such as Qwen/Qwen3-0.6B',
    );
  });
});
