import { join } from 'node:path';
import * as tf from '@tensorflow/tfjs-core';
import { tempDir } from '@rl2/vitest-config/temp-dir';
import { describe, expect, it } from 'vitest';
import { runDpo } from '../src/dpo/run-dpo.js';
import { runSft } from '../src/sft/run-sft.js';
import { caseConfig, writeTrainCase } from './train-case.js';

const quiet = { stdout: { write: () => true } as unknown as NodeJS.WriteStream };

describe('runs leave no tensors behind', () => {
  it('SFT and DPO with validation every step and checkpoints: live tensors back to where they were', async () => {
    const dir = tempDir('rl2-leaks-');
    writeTrainCase(dir);
    const every = [
      'data.test_ratio=0.25',
      'trainer.test_freq=1',
      'trainer.save_freq=1',
      'trainer.val_before_train=true',
    ];
    await runSft(caseConfig('sft', dir, join(dir, 'warm'), every), quiet); // engine start-up state
    const before = tf.memory().numTensors;
    await runSft(caseConfig('sft', dir, join(dir, 'sft'), every), quiet);
    expect(tf.memory().numTensors, 'after rl2 sft').toBe(before);
    await runDpo(caseConfig('dpo', dir, join(dir, 'dpo'), every), quiet);
    expect(tf.memory().numTensors, 'after rl2 dpo').toBe(before);
  }, 60_000);
});
