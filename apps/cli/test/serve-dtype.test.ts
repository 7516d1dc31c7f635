import { describe, expect, it } from 'vitest';
import { rl2 } from './helpers.js';

describe('rl2 serve --dtype', () => {
  it('refuses a dtype it does not take, naming the flag and the values, before loading anything', async () => {
    const r = await rl2(['serve', '--model', '/nonexistent-model', '--dtype', 'fp8']);
    expect(r.code).not.toBe(0);
    expect(r.stderr).toContain(
      'rl2 serve --dtype fp8: use one of auto, float32, bfloat16, float16',
    );
  });

  it('documents the flag in --help', async () => {
    const r = await rl2(['serve', '--help']);
    expect(r.code).toBe(0);
    expect(r.stdout).toMatch(
      /--dtype <dtype>.*auto \(bfloat16 for a bfloat16 checkpoint, else float32\)/,
    );
  });
});
