import { existsSync, mkdirSync, readdirSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { SeededRng } from '@rl2/data';
import { tempDir } from '@rl2/vitest-config/temp-dir';
import { describe, expect, it } from 'vitest';
import { listCheckpoints, resolveCheckpoint } from './resolve-checkpoint.js';
import { type TrainerState, loadCheckpoint, saveCheckpoint } from './trainer-state.js';

const state: TrainerState = {
  version: 1,
  trainer: 'sft',
  step: 3,
  totalSteps: 10,
  epoch: 0,
  batchInEpoch: 3,
  order: [2, 0, 1],
  rng: [1, 2, 3, 4],
  lr: 1e-5,
  savedAt: 'now',
};
const optimizer = {
  step: 3,
  moments: { w: { shape: [2], m: Float32Array.from([0.5, -1]), v: Float32Array.from([0.25, 1]) } },
};

describe('checkpoints', () => {
  it('round-trips state and optimizer moments; latest picks the newest complete step', async () => {
    const dir = tempDir('rl2-ckpt-');
    await saveCheckpoint(join(dir, 'step-3'), {
      state,
      optimizer,
      saveModel: (d) => {
        mkdirSync(d);
        writeFileSync(join(d, 'config.json'), '{}');
      },
    });
    await saveCheckpoint(join(dir, 'step-12'), { state: { ...state, step: 12 }, optimizer });
    mkdirSync(join(dir, 'step-99')); // incomplete: no trainer_state.json
    expect(listCheckpoints(dir).map((c) => c.step)).toEqual([3, 12]);
    expect(resolveCheckpoint(dir, 'latest')).toBe(join(dir, 'step-12'));
    expect(resolveCheckpoint(dir, null)).toBeUndefined();
    expect(existsSync(join(dir, 'step-3', 'model', 'config.json'))).toBe(true);
    expect(readdirSync(dir).filter((n) => n.startsWith('.tmp'))).toEqual([]);
    const back = loadCheckpoint(join(dir, 'step-3'), 'sft');
    expect(back.state).toEqual(state);
    expect(Array.from(back.optimizer.moments.w.m)).toEqual([0.5, -1]);
    expect(Array.from(back.optimizer.moments.w.v)).toEqual([0.25, 1]);
    expect(back.optimizer.step).toBe(3);
    expect(() => loadCheckpoint(join(dir, 'step-3'), 'dpo')).toThrow(/rl2 sft/);
  });

  it('the saved rng state continues its stream; a damaged one fails naming the file', async () => {
    const dir = tempDir('rl2-ckpt-');
    // [1, 2, 3, 4] is a xoshiro128** state as every rl2 release has written it; its stream is
    // the reference C code's (11520, 0, 5927040), so an older checkpoint resumes exactly.
    await saveCheckpoint(join(dir, 'step-3'), { state, optimizer });
    const rng = SeededRng.fromState(loadCheckpoint(join(dir, 'step-3'), 'sft').state.rng);
    expect([rng.nextUint32(), rng.nextUint32(), rng.nextUint32()]).toEqual([11520, 0, 5927040]);
    await saveCheckpoint(join(dir, 'step-4'), { state: { ...state, rng: [1, 2] }, optimizer });
    expect(() => loadCheckpoint(join(dir, 'step-4'), 'sft')).toThrowError(
      /step-4\/trainer_state\.json: rng: An RNG state is four uint32 words/,
    );
  });

  it('a failing save leaves no partial directory', async () => {
    const dir = tempDir('rl2-ckpt-');
    await expect(
      saveCheckpoint(join(dir, 'step-1'), {
        state,
        optimizer,
        saveModel: () => {
          throw new Error('disk full');
        },
      }),
    ).rejects.toThrow('disk full');
    expect(readdirSync(dir)).toEqual([]);
    expect(resolveCheckpoint(dir, 'latest')).toBeUndefined();
    expect(() => resolveCheckpoint(dir, join(dir, 'nope'))).toThrow(/load_ckpt_from/);
  });
});
