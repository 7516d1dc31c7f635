import { PackingError } from '../errors.js';

/** Throws INVALID_ARGUMENT unless `value` is an integer >= `min`; `name` is the option's name. */
export function assertInteger(name: string, value: number, min: number): void {
  if (!Number.isInteger(value) || value < min) {
    throw new PackingError(
      'INVALID_ARGUMENT',
      `${name} must be an integer >= ${min}, got ${value}.`,
    );
  }
}

/** Throws INVALID_ARGUMENT naming the first entry of `lengths` that is negative or not finite. */
export function assertLengths(name: string, lengths: ArrayLike<number>): void {
  for (let i = 0; i < lengths.length; i++) {
    const v = lengths[i];
    if (!Number.isFinite(v) || v < 0) {
      throw new PackingError(
        'INVALID_ARGUMENT',
        `${name}[${i}] is ${v}; every length must be a finite number >= 0 (a token count).`,
      );
    }
  }
}
