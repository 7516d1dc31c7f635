import { Writable } from 'node:stream';
import { describe, expect, it } from 'vitest';
import { createProgress, formatDuration } from './progress.js';

function sink() {
  const chunks: string[] = [];
  const stream = new Writable({
    write(chunk, _enc, cb) {
      chunks.push(String(chunk));
      cb();
    },
  }) as unknown as NodeJS.WriteStream;
  return { stream, text: () => chunks.join('') };
}

describe('progress', () => {
  it('plain lines every logFreq steps when not a TTY, with ETA from elapsed time', () => {
    const out = sink();
    let t = 0;
    const p = createProgress({
      total: 10,
      start: 0,
      mode: 'auto',
      logFreq: 5,
      stream: out.stream,
      now: () => t,
    });
    for (let step = 1; step <= 10; step++) {
      t += 2000;
      p.update({ step, loss: 1 / step, tokensPerSecond: 100 });
    }
    const lines = out.text().trim().split('\n');
    expect(lines).toEqual([
      'step 5/10 50% loss 0.2000 tok/s 100 eta 0:00:10',
      'step 10/10 100% loss 0.1000 tok/s 100 eta 0:00:00',
    ]);
  });
  it('formats durations', () => {
    expect(formatDuration(3725)).toBe('1:02:05');
    expect(formatDuration(Number.NaN)).toBe('?');
  });
});
