// `rl2 serve --tp N` from outside, as a user runs it: the command started from source, greedy
// requests over both APIs at once, and the tiny models the serve-tp tests serve
// (serve-tp.e2e.test.ts on the native backend, serve-tp-webgpu.e2e.test.ts on webgpu).
import { spawn } from 'node:child_process';
import { mkdirSync, readFileSync, writeFileSync } from 'node:fs';
import { join, resolve } from 'node:path';
import OpenAI from 'openai';
import { expect } from 'vitest';
import { initTinyModel, tmp } from './helpers.js';

const hooks = resolve(
  import.meta.dirname,
  '../../../packages/trainers/test/ranks/register-source.mjs',
);
const cli = ['--import', 'tsx', '--import', hooks, resolve(import.meta.dirname, '../src/cli.ts')];

/**
 * `rl2 serve --model MODEL --port 0 --threads 1 --tp N` with `env` added and `args` after;
 * `ready` resolves to its URL.
 */
export function startServe(
  model: string,
  tp: number,
  env: Record<string, string> = {},
  args: string[] = [],
) {
  const flags = ['--model', model, '--port', '0', '--threads', '1', '--tp', String(tp), ...args];
  const child = spawn(process.execPath, [...cli, 'serve', ...flags], {
    stdio: ['ignore', 'pipe', 'pipe'],
    env: { ...process.env, ...env },
  });
  let stdout = '';
  let stderr = '';
  child.stderr.on('data', (b: Buffer) => {
    stderr += String(b);
  });
  const exited = new Promise<number | null>((done) => child.on('close', done));
  const ready = new Promise<string>((done, fail) => {
    child.stdout.on('data', (b: Buffer) => {
      stdout += String(b);
      const m = /^ready: (http:\/\/\S+)/m.exec(stdout);
      if (m) done(m[1] as string);
    });
    void exited.then((code) => fail(new Error(`rl2 serve --tp ${tp} exited ${code}: ${stderr}`)));
  });
  return { child, ready, exited, output: () => ({ stdout, stderr }) };
}

/** Stops a server started by {@link startServe} unless it has exited, and waits for it. */
export async function stopServe(s: ReturnType<typeof startServe>): Promise<void> {
  if (s.child.exitCode === null && s.child.signalCode === null) {
    // twice: the second signal stops the ranks at once (SIGKILL would orphan them)
    s.child.kill('SIGTERM');
    await new Promise((r) => setTimeout(r, 200));
    s.child.kill('SIGTERM');
  }
  await s.exited;
}

export async function post(url: string, path: string, body: unknown) {
  const res = await fetch(`${url}${path}`, {
    method: 'POST',
    headers: { 'content-type': 'application/json' },
    body: JSON.stringify(body),
  });
  return { status: res.status, body: (await res.json()) as Record<string, unknown> };
}

export interface Answer {
  tokens: (number | string)[];
  logprobs: number[];
}

/**
 * 5 native /generate requests and 2 OpenAI completions, all at once, greedy; through the LoRA
 * adapter `lora` when given (`lora_path`, and the OpenAI `model` set to its name).
 */
export async function generateAll(url: string, lora?: string): Promise<Answer[]> {
  const prompts = [[1, 17, 9, 5, 30], [2, 8], [3, 12, 33, 2, 31, 20, 7, 7], [4], [5, 6, 7]];
  const native = prompts.map(async (input_ids, i) => {
    const { body } = await post(url, '/generate', {
      input_ids,
      sampling_params: { temperature: 0, max_new_tokens: 4 + i, ignore_eos: true },
      return_logprob: true,
      ...(lora ? { lora_path: lora } : {}),
    });
    if (!body.meta_info) throw new Error(`/generate: ${JSON.stringify(body)}`);
    const lps = (body.meta_info as { output_token_logprobs: [number, number][] })
      .output_token_logprobs;
    return { tokens: body.output_ids as number[], logprobs: lps.map((x) => x[0]) };
  });
  const client = new OpenAI({ baseURL: `${url}/v1`, apiKey: 'none', maxRetries: 0 });
  const openai = ['12+7=', '3+4='].map(async (prompt) => {
    const r = await client.completions.create({
      model: lora ?? ((await client.models.list()).data[0]?.id as string),
      prompt,
      max_tokens: 5,
      temperature: 0,
      logprobs: 1,
      ...({ ignore_eos: true } as Record<string, unknown>),
    });
    const lp = r.choices[0]?.logprobs;
    return { tokens: lp?.tokens ?? [], logprobs: lp?.token_logprobs ?? [] };
  });
  return Promise.all([...native, ...openai]);
}

/** The same tokens as `one`, each log-prob within `tol`. */
export function expectSame(tp: Answer[], one: Answer[], tol: number) {
  expect(tp).toHaveLength(one.length);
  one.forEach((want, i) => {
    const got = tp[i] as Answer;
    expect(got.tokens, `request ${i}`).toEqual(want.tokens);
    expect(got.logprobs).toHaveLength(want.logprobs.length);
    for (const [t, lp] of got.logprobs.entries())
      expect(Math.abs(lp - (want.logprobs[t] as number)), `request ${i} token ${t}`).toBeLessThan(
        tol,
      );
  });
}

/** Two random Qwen3 checkpoints (seeds 0 and 1) whose heads, kv heads, MLP and vocabulary divide by 2. */
export async function tinyModels(name: string): Promise<[string, string]> {
  const dir = tmp(name);
  const made: string[] = [];
  for (const seed of ['0', '1']) {
    const out = join(dir, `model-${seed}`);
    const flags = ['--seed', seed, '--kv-heads', '2', '--vocab-size', '100'];
    await initTinyModel(out, 16, flags);
    made.push(out);
  }
  return made as [string, string];
}

/** A seeded stream of floats in [-1, 1) (mulberry32). */
function uniform(seed: number) {
  let a = seed >>> 0;
  return () => {
    a = (a + 0x6d2b79f5) >>> 0;
    let t = a;
    t = Math.imul(t ^ (t >>> 15), t | 1);
    t ^= t + Math.imul(t ^ (t >>> 7), t | 61);
    return (((t ^ (t >>> 14)) >>> 0) / 2 ** 32) * 2 - 1;
  };
}

/** safetensors bytes of float32 `tensors`: an 8-byte header length, the JSON header, the data. */
function safetensors(tensors: Map<string, { shape: number[]; data: Float32Array }>): Buffer {
  const header: Record<string, unknown> = {};
  let offset = 0;
  for (const [name, t] of tensors) {
    header[name] = {
      dtype: 'F32',
      shape: t.shape,
      data_offsets: [offset, offset + t.data.byteLength],
    };
    offset += t.data.byteLength;
  }
  const json = Buffer.from(
    JSON.stringify(header).padEnd(8 * Math.ceil(JSON.stringify(header).length / 8)),
  );
  const size = Buffer.alloc(8);
  size.writeBigUInt64LE(BigInt(json.length));
  return Buffer.concat([
    size,
    json,
    ...[...tensors.values()].map((t) => Buffer.from(t.data.buffer)),
  ]);
}

/**
 * A PEFT LoRA adapter folder for the tiny `model` (rank 4, alpha 8), written by hand as PEFT
 * saves one: random A and B (B not zero, so it changes the outputs) on `targets`, and with
 * `saved` the modules_to_save copies of the embedding and the final norm (random too).
 */
export function writeTinyAdapter(
  dir: string,
  model: string,
  seed: number,
  targets: string[],
  saved = false,
): string {
  const c = JSON.parse(readFileSync(join(model, 'config.json'), 'utf8'));
  const [h, q, kv] = [
    c.hidden_size,
    c.num_attention_heads * c.head_dim,
    c.num_key_value_heads * c.head_dim,
  ];
  const shapes: Record<string, [string, number, number]> = {
    q_proj: ['self_attn', q, h],
    k_proj: ['self_attn', kv, h],
    v_proj: ['self_attn', kv, h],
    o_proj: ['self_attn', h, q],
    gate_proj: ['mlp', c.intermediate_size, h],
    up_proj: ['mlp', c.intermediate_size, h],
    down_proj: ['mlp', h, c.intermediate_size],
  };
  const next = uniform(seed);
  const random = (shape: number[], scale: number, mean = 0) => ({
    shape,
    data: Float32Array.from({ length: shape[0]! * (shape[1] ?? 1) }, () => mean + scale * next()),
  });
  const rank = 4;
  const tensors = new Map<string, { shape: number[]; data: Float32Array }>();
  const prefix = 'base_model.model.model.';
  for (let layer = 0; layer < c.num_hidden_layers; layer++)
    for (const target of targets) {
      const [block, out, inp] = shapes[target]!;
      const module = `${prefix}layers.${layer}.${block}.${target}`;
      tensors.set(`${module}.lora_A.weight`, random([rank, inp], 0.5));
      tensors.set(`${module}.lora_B.weight`, random([out, rank], 0.5));
    }
  if (saved) {
    tensors.set(`${prefix}embed_tokens.weight`, random([c.vocab_size, h], 0.05));
    tensors.set(`${prefix}norm.weight`, random([h], 0.3, 1));
  }
  mkdirSync(dir, { recursive: true });
  writeFileSync(join(dir, 'adapter_model.safetensors'), safetensors(tensors));
  const config = {
    peft_type: 'LORA',
    task_type: 'CAUSAL_LM',
    base_model_name_or_path: model,
    r: rank,
    lora_alpha: 8,
    lora_dropout: 0,
    target_modules: targets,
    use_rslora: false,
    modules_to_save: saved ? ['embed_tokens', 'model.norm'] : null,
    bias: 'none',
    fan_in_fan_out: false,
    inference_mode: true,
    init_lora_weights: true,
  };
  writeFileSync(join(dir, 'adapter_config.json'), JSON.stringify(config));
  return dir;
}
