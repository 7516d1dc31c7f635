import { EventEmitter } from 'node:events';
import { PassThrough } from 'node:stream';
import { describe, expect, it } from 'vitest';
import { interruptSignal } from './interrupt.js';

describe('interruptSignal', () => {
  it('first Ctrl-C aborts (save and exit), second exits with 130 at once', () => {
    const proc = new EventEmitter();
    const stderr = new PassThrough();
    const exits: number[] = [];
    const signal = interruptSignal(proc as never, stderr, (c) => exits.push(c));
    expect(signal.aborted).toBe(false);
    proc.emit('SIGINT');
    expect(signal.aborted).toBe(true);
    expect(exits).toEqual([]);
    expect(String(stderr.read())).toContain('saving a checkpoint');
    proc.emit('SIGINT');
    expect(exits).toEqual([130]);
  });
});
