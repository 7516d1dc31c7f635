import { EventEmitter } from 'node:events';
import { PassThrough } from 'node:stream';
import { describe, expect, it } from 'vitest';
import { STOP_NOTICE, interruptNotice, interruptSignal } from './interrupt.js';

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

  it('rl2 serve says it stops, not that it saves a checkpoint', () => {
    expect(interruptNotice(['serve', '--model', 'm'])).toBe(STOP_NOTICE);
    expect(interruptNotice(['sft'])).toMatch(/saving a checkpoint/);
    const proc = new EventEmitter();
    const stderr = new PassThrough();
    const signal = interruptSignal(proc as never, stderr, () => {}, interruptNotice(['serve']));
    proc.emit('SIGINT');
    expect(signal.aborted).toBe(true);
    const said = String(stderr.read());
    expect(said).toContain('stopping');
    expect(said).not.toContain('checkpoint');
  });
});
