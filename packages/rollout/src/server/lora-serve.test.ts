// rl2 serve --model BASE --lora NAME=DIR: PEFT adapters served by name over one copy of the base,
// SGLang's lora_path on /generate, /load_lora_adapter and /unload_lora_adapter.
import { copyFileSync } from 'node:fs';
import { join } from 'node:path';
import {
  LORA_TARGET_MODULES,
  type LoraSpec,
  attachLora,
  createDecoderModel,
  initLoraParams,
  loadModel,
  mergeLora,
  peftLoraConfig,
  saveModel,
  savedModuleParams,
  writePeftAdapter,
} from '@rl2/models';
import * as tf from '@tensorflow/tfjs-core';
import { tempDir } from '@rl2/vitest-config/temp-dir';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { ADDITION_TOKENIZER, writeTinyCheckpoint } from '../../test/tiny-checkpoint.js';
import { type ServedModel, serveModel } from './serve-model.js';

const spec: LoraSpec = {
  rank: 4,
  alpha: 8,
  dropout: 0,
  targetModules: LORA_TARGET_MODULES,
  useRslora: false,
};
let base: string;
let adapterDir: string;
let mergedDir: string;
const servers: ServedModel[] = [];

/**
 * A trained-looking adapter (B not zero) in PEFT's format, and the base with it merged in; the
 * first also saves its own RMSNorm weights (modules_to_save: the base's times 1.5).
 */
async function writeAdapter(dir: string, seed: number): Promise<void> {
  const { model } = await loadModel(base);
  const params = initLoraParams(model.config, spec, seed);
  for (const [name, v] of params)
    if (name.endsWith('lora_B.weight')) v.assign(tf.randomNormal(v.shape, 0, 0.5, 'float32', seed));
  const own = seed === 1 ? { ...spec, modulesToSave: ['norm'] } : spec;
  const norms = new Map<string, tf.Tensor>();
  for (const name of savedModuleParams(model.params.keys(), own.modulesToSave ?? []))
    norms.set(name, tf.mul(model.params.get(name)!, 1.5));
  await writePeftAdapter(
    dir,
    new Map([...params, ...norms]),
    peftLoraConfig(own, base, 'causal-lm'),
  );
  if (seed === 1) {
    const lora = attachLora(model, params, own, norms);
    const merged = mergeLora(lora);
    await saveModel(mergedDir, createDecoderModel(model.config, merged.params));
    for (const f of ['tokenizer.json', 'tokenizer_config.json'])
      copyFileSync(join(ADDITION_TOKENIZER, f), join(mergedDir, f));
    merged.dispose();
  }
  tf.dispose([...model.params.values(), ...params.values(), ...norms.values()]);
}

const serve = async (model: string, extra: Partial<Parameters<typeof serveModel>[0]> = {}) => {
  const s = await serveModel({
    model,
    port: 0,
    backend: 'cpu',
    threads: 1,
    log: () => {},
    ...extra,
  });
  servers.push(s);
  return s;
};

const post = async (s: ServedModel, path: string, body: unknown) => {
  const res = await fetch(`${s.url}${path}`, { method: 'POST', body: JSON.stringify(body) });
  return { status: res.status, json: (await res.json()) as Record<string, unknown> };
};

const generate = (s: ServedModel, lora?: string) =>
  post(s, '/generate', {
    input_ids: [1, 5, 9, 12, 7],
    sampling_params: { temperature: 0, max_new_tokens: 8, ignore_eos: true },
    return_logprob: true,
    ...(lora ? { lora_path: lora } : {}),
  });

const outputOf = (r: { json: Record<string, unknown> }) => {
  const meta = r.json.meta_info as { output_token_logprobs: [number, number][] };
  return {
    ids: r.json.output_ids as number[],
    logprobs: meta.output_token_logprobs.map((t) => t[0]),
  };
};

beforeAll(async () => {
  base = await writeTinyCheckpoint(3);
  const dir = tempDir('rl2-serve-lora-');
  adapterDir = join(dir, 'adapter');
  mergedDir = join(dir, 'merged');
  await writeAdapter(adapterDir, 1);
  await writeAdapter(join(dir, 'second'), 2);
}, 60_000);

afterAll(async () => {
  await Promise.all(servers.map((s) => s.close()));
});

describe('rl2 serve with LoRA adapters', () => {
  it('lora_path generates as the merged checkpoint does (with its saved norms); no lora_path as the base', async () => {
    const lora = await serve(base, { loras: [{ name: 'addition', path: adapterDir }] });
    const merged = await serve(mergedDir);
    const plain = await serve(base);
    const viaAdapter = outputOf(await generate(lora, 'addition'));
    const viaMerged = outputOf(await generate(merged));
    expect(viaAdapter.ids).toEqual(viaMerged.ids);
    for (const [i, lp] of viaAdapter.logprobs.entries())
      expect(lp).toBeCloseTo(viaMerged.logprobs[i]!, 4);
    const baseOut = outputOf(await generate(lora));
    expect(baseOut).toEqual(outputOf(await generate(plain)));
    expect(baseOut.logprobs).not.toEqual(viaAdapter.logprobs);
  }, 60_000);

  it('the OpenAI API picks an adapter by model (its name, or <model>:<name>) and lists it', async () => {
    const s = await serve(base, {
      loras: [{ name: 'addition', path: adapterDir }],
      servedModelName: 'tiny',
    });
    const complete = async (model: string) => {
      const res = await fetch(`${s.url}/v1/completions`, {
        method: 'POST',
        headers: { 'content-type': 'application/json' },
        body: JSON.stringify({
          model,
          prompt: [1, 5, 9, 12, 7],
          max_tokens: 6,
          temperature: 0,
          logprobs: 1,
        }),
      });
      const body = (await res.json()) as { choices: { logprobs: { token_logprobs: number[] } }[] };
      return { status: res.status, logprobs: body.choices?.[0]?.logprobs.token_logprobs };
    };
    const [byName, bySglang, baseOut] = [
      await complete('addition'),
      await complete('tiny:addition'),
      await complete('tiny'),
    ];
    expect(byName.status).toBe(200);
    expect(bySglang.logprobs).toEqual(byName.logprobs);
    expect(baseOut.logprobs).not.toEqual(byName.logprobs);
    expect((await complete('tiny:nope')).status).toBe(400);
    const models = (await (await fetch(`${s.url}/v1/models`)).json()) as {
      data: { id: string; parent: string | null }[];
    };
    expect(models.data.map((m) => [m.id, m.parent])).toEqual([
      ['tiny', null],
      ['addition', 'tiny'],
    ]);
  }, 60_000);

  it('/load_lora_adapter and /unload_lora_adapter change what lora_path can name', async () => {
    const s = await serve(base, { enableLora: true });
    const missing = await generate(s, 'second');
    expect(missing.status).toBe(400);
    expect(JSON.stringify(missing.json)).toContain(
      'lora_path \\"second\\" is not a loaded LoRA adapter (loaded: none)',
    );
    const loaded = await post(s, '/load_lora_adapter', {
      lora_name: 'second',
      lora_path: join(adapterDir, '..', 'second'),
    });
    expect(loaded.status).toBe(200);
    expect(loaded.json.loaded_adapters).toEqual({ second: join(adapterDir, '..', 'second') });
    expect((await generate(s, 'second')).status).toBe(200);
    const bad = await post(s, '/load_lora_adapter', {
      lora_name: 'x',
      lora_path: join(adapterDir, 'nope'),
    });
    expect(bad.status).toBe(400);
    expect(bad.json.error_message).toMatch(
      /Failed to load LoRA adapter x from .*nope: .*adapter_config\.json/,
    );
    expect(
      (await post(s, '/unload_lora_adapter', { lora_name: 'second' })).json.loaded_adapters,
    ).toEqual({});
    expect((await generate(s, 'second')).status).toBe(400);
  }, 60_000);

  it('a server without LoRA says how to start one', async () => {
    const s = await serve(base);
    const r = await generate(s, 'addition');
    expect(r.status).toBe(400);
    expect(JSON.stringify(r.json)).toContain('start it with --lora NAME=DIR or --enable-lora');
  }, 60_000);
});
