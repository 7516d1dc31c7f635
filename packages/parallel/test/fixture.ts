// Loads the torch reference values written by scripts/make_fixtures.py.
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import * as tf from '@tensorflow/tfjs-core';

export interface Stored {
  shape: number[];
  data: number[];
}

// biome-ignore lint/suspicious/noExplicitAny: JSON fixtures mix tensors, numbers and lists
export function fixture(name: string): any {
  return JSON.parse(readFileSync(join(import.meta.dirname, '..', 'fixtures', name), 'utf8'));
}

export function tensor(s: Stored): tf.Tensor {
  return tf.tensor(s.data, s.shape, 'float32');
}

/** Norm-wise relative error ||a - b|| / max(||b||, tiny). */
export function relErr(a: ArrayLike<number> | tf.Tensor, b: ArrayLike<number> | tf.Tensor): number {
  const x = a instanceof tf.Tensor ? a.dataSync() : a;
  const y = b instanceof tf.Tensor ? b.dataSync() : b;
  if (x.length !== y.length) return Number.POSITIVE_INFINITY;
  let num = 0;
  let den = 0;
  for (let i = 0; i < x.length; i++) {
    num += (x[i]! - y[i]!) ** 2;
    den += y[i]! ** 2;
  }
  return Math.sqrt(num) / Math.max(Math.sqrt(den), 1e-30);
}
