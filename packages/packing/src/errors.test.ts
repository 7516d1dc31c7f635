import { describe, expect, it } from 'vitest';
import { PackingError } from './index.js';

describe('PackingError', () => {
  it('carries a code and a name callers can branch on', () => {
    const e = new PackingError('INVALID_ARGUMENT', 'lengths must be non-negative');
    expect(e).toBeInstanceOf(Error);
    expect(e.name).toBe('PackingError');
    expect(e.code).toBe('INVALID_ARGUMENT');
  });
});
