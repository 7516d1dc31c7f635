// Writes PEFT adapter folders with this package's writer into fixtures/lora/ts-written/ so that
// `python3 scripts/make_lora_fixtures.py --verify-ts` can read them as PEFT lays them out (keys,
// shapes, adapter_config.json) and run the PyTorch LoRA reference on them (result:
// fixtures/lora/ts-written/python-verified.json).
// Run: npx tsx packages/models/scripts/write-ts-adapters.ts
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import * as tf from '@tensorflow/tfjs-core';
import '@tensorflow/tfjs-backend-cpu';
import { parseSafetensors } from '../src/checkpoint/safetensors-reader.js';
import { loraParamsFromHost } from '../src/lora/lora-params.js';
import type { LoraTargetModule } from '../src/lora/lora-spec.js';
import { peftLoraConfig, writePeftAdapter } from '../src/lora/peft-adapter.js';

/** The fixture models whose reference adapters are written, each into a folder of its name. */
export const TS_ADAPTERS = ['qwen3', 'llama'] as const;

export async function writeTsAdapters(fixtures: string, out: string): Promise<void> {
  await tf.setBackend('cpu');
  const meta = JSON.parse(readFileSync(join(fixtures, 'lora', 'reference.json'), 'utf8')) as Record<
    string,
    { target_modules: LoraTargetModule[]; rank: number; alpha: number; use_rslora: boolean }
  >;
  for (const family of TS_ADAPTERS) {
    const m = meta[`${family}-model`]!;
    const file = join(fixtures, 'lora', `${family}-model-adapter.safetensors`);
    const params = loraParamsFromHost(parseSafetensors(new Uint8Array(readFileSync(file))));
    const spec = {
      rank: m.rank,
      alpha: m.alpha,
      dropout: 0,
      targetModules: m.target_modules,
      useRslora: m.use_rslora,
    };
    await writePeftAdapter(join(out, family), params, peftLoraConfig(spec, family, 'causal-lm'));
    for (const v of params.values()) v.dispose();
  }
}

if (process.argv[1]?.endsWith('write-ts-adapters.ts')) {
  const fixtures = join(import.meta.dirname, '..', 'fixtures');
  await writeTsAdapters(fixtures, join(fixtures, 'lora', 'ts-written'));
}
