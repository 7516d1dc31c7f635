import { describe, expect, it } from 'vitest';
import { describeLeftOut, runLength } from './run-length.js';

const trainer = (n_epochs: number, max_steps: number | null = null) => ({ n_epochs, max_steps });

describe('runLength', () => {
  it('counts full batches only (RL2 drop_last), capped by trainer.max_steps; a batch over the data takes it all', () => {
    expect(runLength(trainer(3), 10, 4)).toEqual({ stepsPerEpoch: 2, totalSteps: 6, leftOut: 2 });
    expect(runLength(trainer(3, 4), 10, 4).totalSteps).toBe(4);
    expect(runLength(trainer(2), 8, 4)).toEqual({ stepsPerEpoch: 2, totalSteps: 4, leftOut: 0 });
    expect(runLength(trainer(2), 3, 128)).toEqual({ stepsPerEpoch: 1, totalSteps: 2, leftOut: 0 });
  });

  it('says what each epoch leaves out, once a run finishes an epoch', () => {
    const line = describeLeftOut(
      runLength(trainer(1), 10, 4),
      10,
      'training items',
      'data.train.batch_size',
      4,
    );
    expect(line).toBe(
      '2 steps per epoch of data.train.batch_size=4 take 8 of the 10 training items: 2 per epoch ' +
        "are not trained on (as RL2's dataloader drops its last partial batch); set " +
        'data.train.batch_size to a divisor of 10 to use them all',
    );
    expect(describeLeftOut(runLength(trainer(1), 8, 4), 8, 'rows', 'k', 4)).toBeUndefined();
    expect(describeLeftOut(runLength(trainer(1, 1), 10, 4), 10, 'rows', 'k', 4)).toBeUndefined();
  });
});
