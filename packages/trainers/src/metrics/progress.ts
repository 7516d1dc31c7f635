import { SingleBar } from 'cli-progress';

/** What a progress display shows after each optimizer step. */
export interface ProgressUpdate {
  readonly step: number;
  readonly loss: number;
  readonly tokensPerSecond: number;
  readonly lr?: number;
  readonly extra?: Record<string, number>;
}

/** A progress display; `lines` mode writes one plain line every `logFreq` steps. */
export interface Progress {
  update(u: ProgressUpdate): void;
  /** A message that must not garble the bar (validation results, checkpoint paths). */
  log(message: string): void;
  stop(): void;
}

export interface ProgressOptions {
  readonly total: number;
  readonly start: number;
  readonly mode: 'auto' | 'bar' | 'lines' | 'none';
  readonly logFreq: number;
  readonly stream?: NodeJS.WriteStream;
  readonly now?: () => number;
}

/** `h:mm:ss` for an ETA in seconds. */
export function formatDuration(seconds: number): string {
  if (!Number.isFinite(seconds) || seconds < 0) return '?';
  const s = Math.round(seconds);
  const h = Math.floor(s / 3600);
  const m = Math.floor((s % 3600) / 60);
  return `${h}:${String(m).padStart(2, '0')}:${String(s % 60).padStart(2, '0')}`;
}

const fmt = (x: number) => (Math.abs(x) >= 1e-3 || x === 0 ? x.toFixed(4) : x.toExponential(2));

/**
 * A cli-progress bar with ETA, tokens/s and loss on a terminal; plain periodic lines
 * (`step 3/20 15% loss 1.2345 tok/s 512 eta 0:00:12`) when the stream is not a TTY.
 */
export function createProgress(opts: ProgressOptions): Progress {
  const stream = opts.stream ?? process.stdout;
  const now = opts.now ?? Date.now;
  const mode = opts.mode === 'auto' ? (stream.isTTY ? 'bar' : 'lines') : opts.mode;
  const began = now();
  const eta = (step: number) =>
    ((now() - began) / 1000 / Math.max(1, step - opts.start)) * (opts.total - step);

  if (mode === 'bar') {
    const bar = new SingleBar({
      stream,
      format: ' {bar} {value}/{total} | ETA {eta_formatted} | loss {loss} | {tps} tok/s | lr {lr}',
      hideCursor: true,
      etaBuffer: 20,
    });
    bar.start(opts.total, opts.start, { loss: '-', tps: '-', lr: '-' });
    return {
      update: (u) =>
        bar.update(u.step, {
          loss: fmt(u.loss),
          tps: Math.round(u.tokensPerSecond),
          lr: u.lr === undefined ? '-' : fmt(u.lr),
        }),
      log: (message) => {
        stream.write(`\r\x1b[K${message}\n`);
        bar.render();
      },
      stop: () => bar.stop(),
    };
  }
  if (mode === 'none') return { update: () => {}, log: () => {}, stop: () => {} };
  return {
    update: (u) => {
      if (u.step % opts.logFreq !== 0 && u.step !== opts.total) return;
      const pct = Math.floor((100 * u.step) / Math.max(1, opts.total));
      const extra = Object.entries(u.extra ?? {})
        .map(([k, v]) => ` ${k} ${fmt(v)}`)
        .join('');
      const lr = u.lr === undefined ? '' : ` lr ${fmt(u.lr)}`;
      stream.write(
        `step ${u.step}/${opts.total} ${pct}% loss ${fmt(u.loss)}${extra}${lr} ` +
          `tok/s ${Math.round(u.tokensPerSecond)} eta ${formatDuration(eta(u.step))}\n`,
      );
    },
    log: (message) => stream.write(`${message}\n`),
    stop: () => {},
  };
}
