import { spawn } from 'node:child_process';
import { existsSync, readlinkSync } from 'node:fs';
import { join, resolve } from 'node:path';
import { describe, expect, it } from 'vitest';
import { EXAMPLE_TOKENIZER, rl2, tmp, writeTinyData } from './helpers.js';

// The real process, from source (tsx, @rl2/* resolved to packages/*/src as vitest does): Ctrl-C
// is a signal delivered through the event loop, which an in-process AbortController cannot test.
const hooks = resolve(import.meta.dirname, '../../../packages/trainers/test/ranks/register-source.mjs');
const cli = [process.execPath, '--import', 'tsx', '--import', hooks, resolve(import.meta.dirname, '../src/cli.ts')];

describe('Ctrl-C during rl2 sft', () => {
  it('finishes the step, saves a checkpoint and exits with 130', async () => {
    const dir = tmp('sigint');
    const model = join(dir, 'model');
    const data = writeTinyData(dir);
    expect((await rl2(['init-model', '--arch', 'qwen3', '--tokenizer', EXAMPLE_TOKENIZER, '--out', model, '--hidden-size', '16', '--layers', '1', '--heads', '2'])).code).toBe(0);
    const saveDir = join(dir, 'run');
    const child = spawn(cli[0]!, [
      ...cli.slice(1),
      'sft',
      `actor.model_name=${model}`,
      `data.train.path=${data.sftTrain}`,
      `data.test.path=${data.sftTest}`,
      'data.train.batch_size=2',
      'trainer.n_epochs=1000',
      `trainer.save_dir=${saveDir}`,
      'trainer.progress=lines',
      'trainer.backend=cpu',
      'trainer.threads=1',
      'trainer.report=false',
      'trainer.use_tensorboard=false',
    ], { stdio: ['ignore', 'pipe', 'pipe'] });
    let out = '';
    let sent = false;
    child.stdout.on('data', (b: Buffer) => {
      out += String(b);
      if (!sent && /step 2\//.test(out)) {
        sent = true;
        child.kill('SIGINT');
      }
    });
    child.stderr.on('data', (b: Buffer) => {
      out += String(b);
    });
    const code = await new Promise<number | null>((done) => child.on('close', done));
    expect(sent, out).toBe(true);
    expect(code, out).toBe(130);
    expect(out).toMatch(/interrupted at step \d+\/4000; resume with trainer.load_ckpt_from=latest/);
    expect(existsSync(join(saveDir, readlinkSync(join(saveDir, 'latest')), 'trainer_state.json'))).toBe(true);
  }, 90_000);
});
