// `rl2 serve --tp N` from outside, as a user runs it: the command started from source, greedy
// requests over both APIs at once, and the tiny models the serve-tp tests serve
// (serve-tp.e2e.test.ts on the native backend, serve-tp-webgpu.e2e.test.ts on webgpu).
import { spawn } from 'node:child_process';
import { join, resolve } from 'node:path';
import OpenAI from 'openai';
import { expect } from 'vitest';
import { initTinyModel, tmp } from './helpers.js';

const hooks = resolve(
  import.meta.dirname,
  '../../../packages/trainers/test/ranks/register-source.mjs',
);
const cli = ['--import', 'tsx', '--import', hooks, resolve(import.meta.dirname, '../src/cli.ts')];

/** `rl2 serve --model MODEL --port 0 --threads 1 --tp N` with `env` added; `ready` resolves to its URL. */
export function startServe(model: string, tp: number, env: Record<string, string> = {}) {
  const child = spawn(
    process.execPath,
    [...cli, 'serve', '--model', model, '--port', '0', '--threads', '1', '--tp', String(tp)],
    { stdio: ['ignore', 'pipe', 'pipe'], env: { ...process.env, ...env } },
  );
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

/** 5 native /generate requests and 2 OpenAI completions, all at once, greedy. */
export async function generateAll(url: string): Promise<Answer[]> {
  const prompts = [[1, 17, 9, 5, 30], [2, 8], [3, 12, 33, 2, 31, 20, 7, 7], [4], [5, 6, 7]];
  const native = prompts.map(async (input_ids, i) => {
    const { body } = await post(url, '/generate', {
      input_ids,
      sampling_params: { temperature: 0, max_new_tokens: 4 + i, ignore_eos: true },
      return_logprob: true,
    });
    const lps = (body.meta_info as { output_token_logprobs: [number, number][] })
      .output_token_logprobs;
    return { tokens: body.output_ids as number[], logprobs: lps.map((x) => x[0]) };
  });
  const client = new OpenAI({ baseURL: `${url}/v1`, apiKey: 'none', maxRetries: 0 });
  const openai = ['12+7=', '3+4='].map(async (prompt) => {
    const r = await client.completions.create({
      model: (await client.models.list()).data[0]?.id as string,
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
