import { existsSync, mkdtempSync, rmSync, symlinkSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterEach, describe, expect, it } from 'vitest';
import { loadConfig } from '../config/load-config.js';
import { sftConfigSchema } from '../config/sft-config.js';
import { SINGLE_PROCESS } from '../parallel-model/data-parallel.js';
import { RunSession } from './run-session.js';

// /dev/full answers every write with ENOSPC: a full disk, for real, without filling one. Node's
// error for it ("ENOSPC: no space left on device, write") names no file.
const FULL = '/dev/full';
const dirs: string[] = [];
afterEach(() => {
  for (const d of dirs.splice(0)) rmSync(d, { recursive: true, force: true });
});

function session(): { session: RunSession; saveDir: string } {
  const saveDir = mkdtempSync(join(tmpdir(), 'rl2-full-'));
  dirs.push(saveDir);
  const config = loadConfig(sftConfigSchema, {
    overrides: ['actor.model_name=m', 'data.train.path=t.jsonl', `trainer.save_dir=${saveDir}`],
  });
  const s = new RunSession({
    trainer: { ...config.trainer, progress: 'none', use_tensorboard: false },
    config,
    io: {},
    world: SINGLE_PROCESS,
    totalSteps: 1,
  });
  // after the session read it back (reading /dev/full never ends)
  rmSync(join(saveDir, 'metrics.jsonl'));
  symlinkSync(FULL, join(saveDir, 'metrics.jsonl'));
  return { session: s, saveDir };
}

describe.skipIf(!existsSync(FULL))('a full disk', () => {
  it('a checkpoint that cannot be written names its folder and what to do', async () => {
    const { session: s, saveDir } = session();
    const step = join(saveDir, 'step-0');
    await expect(s.save(async () => writeFileSync(FULL, 'weights'))).rejects.toMatchObject({
      code: 'WRITE_FAILED',
      message:
        `cannot write checkpoint ${step}: ENOSPC: no space left on device, write; the disk is full ` +
        '(or over quota): free space there, or set trainer.save_dir to a folder on another disk',
    });
    s.close();
  });

  it('metrics.jsonl that cannot be appended to names the file', () => {
    const { session: s, saveDir } = session();
    expect(() => s.record({ 'train/loss': 1 })).toThrow(
      `cannot write metrics ${join(saveDir, 'metrics.jsonl')}: ENOSPC`,
    );
    s.close();
  });

  it('other errors pass through as they are', async () => {
    const { session: s } = session();
    const own = new Error('gather failed on rank 1');
    await expect(s.save(async () => Promise.reject(own))).rejects.toBe(own);
    s.close();
  });
});
