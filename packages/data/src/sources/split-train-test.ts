import { DataError } from '../errors.js';
import { SeededRng } from '../random/seeded-rng.js';

/** Indices of the train and test parts of a dataset of `n` rows. */
export interface TrainTestSplit {
  train: number[];
  test: number[];
}

/**
 * Splits `n` rows into train/test when no test path is given (RL2: `test_ratio`, default 0.03,
 * fixed seed). The test part has round(n * testRatio) rows (at least 1 when testRatio > 0 and
 * n > 1), chosen by a seeded Fisher-Yates shuffle (`SeededRng`), so the split is reproducible
 * across runs and machines. Both parts keep the original row order.
 */
export function splitTrainTest(n: number, testRatio = 0.03, seed = 42): TrainTestSplit {
  if (!(testRatio >= 0 && testRatio < 1))
    throw new DataError('INVALID_ARGUMENT', `test_ratio must be in [0, 1), got ${testRatio}.`);
  if (!Number.isInteger(n) || n < 0)
    throw new DataError('INVALID_ARGUMENT', `Row count must be a non-negative integer, got ${n}.`);
  let nTest = Math.round(n * testRatio);
  if (testRatio > 0 && n > 1 && nTest === 0) nTest = 1;
  if (nTest >= n && n > 0) nTest = n - 1;
  const order = new SeededRng(seed).permutation(n);
  const isTest = new Uint8Array(n);
  for (let k = 0; k < nTest; k++) isTest[order[k] as number] = 1;
  const train: number[] = [];
  const test: number[] = [];
  for (let i = 0; i < n; i++) (isTest[i] ? test : train).push(i);
  return { train, test };
}
