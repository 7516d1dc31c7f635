import { existsSync } from 'node:fs';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { parseLoraFlags } from '../src/commands/serve-command.js';
import { QUIET_RUN, initTinyModel, rl2, tmp, writeTinyData } from './helpers.js';

// LoRA from the command line: rl2 sft actor.lora.rank=N writes a PEFT adapter beside each
// checkpoint, rl2 serve --model BASE --lora NAME=DIR serves it by name (SGLang's lora_path), and
// rl2 export --merge writes base + adapter as a plain checkpoint.
describe('rl2 sft with LoRA, then rl2 export --merge and rl2 serve --lora', () => {
  it('trains an adapter and serves it next to the base', async () => {
    const dir = tmp('lora');
    const model = join(dir, 'model');
    await initTinyModel(model);
    const data = writeTinyData(dir);
    const save = join(dir, 'run');
    const sft = await rl2([
      'sft',
      `actor.model_name=${model}`,
      `data.train.path=${data.sftTrain}`,
      `data.test.path=${data.sftTest}`,
      'data.train.batch_size=4',
      'actor.max_length_per_device=128',
      'actor.lora.rank=4',
      'actor.lora.target_modules=[q_proj, v_proj, down_proj]',
      'actor.lr=5e-2',
      'actor.warmup_ratio=0',
      `trainer.save_dir=${save}`,
      ...QUIET_RUN,
    ]);
    expect(sft.code, sft.stderr).toBe(0);
    const adapter = join(save, 'latest', 'adapter');
    expect(existsSync(join(adapter, 'adapter_model.safetensors'))).toBe(true);

    const merged = join(dir, 'merged');
    const exported = await rl2(['export', '--merge', '--adapter', adapter, '--out', merged]);
    expect(exported.code, exported.stderr).toBe(0);
    expect(exported.stdout).toContain(`wrote ${merged}`);

    const stop = new AbortController();
    const serve = async (argv: string[]) => {
      let ready: (url: string) => void = () => {};
      const url = new Promise<string>((r) => {
        ready = r;
      });
      const done = rl2(['serve', '--port', '0', '--threads', '1', ...argv], {
        signal: stop.signal,
        onStdout: (text) => {
          const m = /ready: (http:\/\/\S+)/.exec(text);
          if (m) ready(m[1]!);
        },
      });
      const at = await Promise.race([url, done.then((r) => Promise.reject(new Error(r.stderr)))]);
      return { at, done };
    };
    const withLora = await serve(['--model', model, '--lora', `sft=${adapter}`]);
    const plainMerged = await serve(['--model', merged]);
    const ask = async (at: string, lora?: string) => {
      const res = await fetch(`${at}/generate`, {
        method: 'POST',
        body: JSON.stringify({
          text: '12+7=',
          sampling_params: { temperature: 0, max_new_tokens: 4, ignore_eos: true },
          return_logprob: true,
          ...(lora ? { lora_path: lora } : {}),
        }),
      });
      expect(res.status).toBe(200);
      const body = (await res.json()) as {
        meta_info: { output_token_logprobs: [number, number][] };
      };
      return body.meta_info.output_token_logprobs;
    };
    const base = await ask(withLora.at);
    const tuned = await ask(withLora.at, 'sft');
    expect(tuned.map((t) => t[0])).not.toEqual(base.map((t) => t[0]));
    // rl2 export --merge: the merged checkpoint generates what base + adapter does
    const fromMerged = await ask(plainMerged.at);
    expect(fromMerged.map((t) => t[1])).toEqual(tuned.map((t) => t[1]));
    for (const [i, t] of fromMerged.entries()) expect(t[0]).toBeCloseTo(tuned[i]![0], 4);
    stop.abort();
    expect((await withLora.done).code).toBe(0);
    expect((await plainMerged.done).code).toBe(0);
  }, 120_000);

  it('--lora NAME=DIR is parsed per flag; a bad one names the form to write', () => {
    expect(parseLoraFlags(['a=/x', 'b=/y'])).toEqual([
      { name: 'a', path: '/x' },
      { name: 'b', path: '/y' },
    ]);
    expect(parseLoraFlags('a=/x')).toEqual([{ name: 'a', path: '/x' }]);
    expect(() => parseLoraFlags('/x')).toThrow(/--lora \/x: write NAME=DIR/);
    expect(() => parseLoraFlags(['a=/x', 'a=/y'])).toThrow(/the name a is given twice/);
  });
});
