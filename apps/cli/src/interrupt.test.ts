import { EventEmitter } from 'node:events';
import { PassThrough } from 'node:stream';
import { describe, expect, it } from 'vitest';
import {
  STOP_NOTICE,
  interruptNotice,
  interruptSignal,
  interruptedExitCode,
  signalExitCode,
} from './interrupt.js';

describe('interruptSignal', () => {
  it('first Ctrl-C aborts (save and exit 130), second exits with 130 at once', () => {
    const proc = new EventEmitter();
    const stderr = new PassThrough();
    const exits: number[] = [];
    const signal = interruptSignal(proc as never, stderr, (c) => exits.push(c));
    expect(signal.aborted).toBe(false);
    proc.emit('SIGINT');
    expect(signal.aborted).toBe(true);
    expect(interruptedExitCode(signal)).toBe(130);
    expect(exits).toEqual([]);
    expect(String(stderr.read())).toBe(
      '\nrl2: interrupted; saving a checkpoint after this step (Ctrl-C again to quit without saving)\n',
    );
    proc.emit('SIGINT');
    expect(exits).toEqual([130]);
  });

  it('SIGTERM (Slurm, Kubernetes) saves like Ctrl-C: exit 143 after saving, a second signal exits at once', () => {
    const proc = new EventEmitter();
    const stderr = new PassThrough();
    const exits: number[] = [];
    const signal = interruptSignal(proc as never, stderr, (c) => exits.push(c));
    proc.emit('SIGTERM');
    expect(signal.aborted).toBe(true);
    expect(signal.reason).toBe('SIGTERM');
    expect(interruptedExitCode(signal)).toBe(143);
    expect(String(stderr.read())).toBe(
      '\nrl2: got SIGTERM; saving a checkpoint after this step (SIGTERM again to quit without saving)\n',
    );
    expect(exits).toEqual([]);
    proc.emit('SIGINT');
    expect(exits).toEqual([130]);
    proc.emit('SIGTERM');
    expect(exits).toEqual([130, 143]);
  });

  it('on a rank, the same signal again within the window is the same request (scheduler + launcher); later it quits', () => {
    const proc = new EventEmitter();
    const exits: number[] = [];
    let now = 1000;
    interruptSignal(proc as never, new PassThrough(), (c) => exits.push(c), {
      repeatWindowMs: 2000,
      now: () => now,
    });
    proc.emit('SIGTERM');
    now += 10;
    proc.emit('SIGTERM');
    expect(exits).toEqual([]);
    proc.emit('SIGINT'); // another signal is a second request
    expect(exits).toEqual([130]);
    now += 2000;
    proc.emit('SIGTERM');
    expect(exits).toEqual([130, 143]);
  });

  it('exit codes: 128 + the signal number; an abort without a signal counts as Ctrl-C', () => {
    expect([signalExitCode('SIGINT'), signalExitCode('SIGTERM'), signalExitCode('SIGHUP')]).toEqual(
      [130, 143, 129],
    );
    const ac = new AbortController();
    ac.abort();
    expect(interruptedExitCode(ac.signal)).toBe(130);
    expect(interruptedExitCode(undefined)).toBe(130);
  });

  it('rl2 serve says it stops, not that it saves a checkpoint', () => {
    expect(interruptNotice(['serve', '--model', 'm'])).toBe(STOP_NOTICE);
    expect(interruptNotice(['sft'])).toMatch(/saving a checkpoint/);
    const proc = new EventEmitter();
    const stderr = new PassThrough();
    const signal = interruptSignal(proc as never, stderr, () => {}, {
      notice: interruptNotice(['serve']),
    });
    proc.emit('SIGINT');
    expect(signal.aborted).toBe(true);
    const said = String(stderr.read());
    expect(said).toBe('\nrl2: interrupted; stopping (Ctrl-C again to quit at once)\n');
    expect(said).not.toContain('checkpoint');
  });
});
