import { constants } from 'node:os';

/** The signals that stop a command gracefully: Ctrl-C, and what Slurm, Kubernetes and `kill` send first. */
export const STOP_SIGNALS = ['SIGINT', 'SIGTERM'] as const;
export type StopSignal = (typeof STOP_SIGNALS)[number];

/** The slice of `process` the signal handling needs; a fake in tests. */
export interface SignalSource {
  on(event: StopSignal, listener: () => void): unknown;
}

/** What a trainer does on the first signal. */
export const SAVE_NOTICE = 'saving a checkpoint after this step';

/** What the first signal does to a command that saves nothing (`rl2 serve`). */
export const STOP_NOTICE = 'stopping';

/** Options of {@link interruptSignal}. */
export interface InterruptOptions {
  /** What the first signal does (default {@link SAVE_NOTICE}). */
  readonly notice?: string;
  /**
   * A repeat of the first signal within this many ms is the same request, not a second one
   * (default 0). Ranks under a launcher use it: a scheduler that signals every process of a job
   * (Slurm's scancel) and the launcher passing the signal on both reach a rank at once.
   */
  readonly repeatWindowMs?: number;
  readonly now?: () => number;
}

/** The shell's exit code of a process stopped by `signal`: 128 + its number (SIGINT 130, SIGTERM 143). */
export function signalExitCode(signal: NodeJS.Signals): number {
  return 128 + constants.signals[signal];
}

/**
 * The exit code of a run that an interrupt stopped after saving: 128 + the number of the signal
 * that aborted `signal` (130 for Ctrl-C, 143 for SIGTERM; 130 for an abort without a signal).
 */
export function interruptedExitCode(signal: AbortSignal | undefined): number {
  const reason = signal?.reason;
  return signalExitCode(STOP_SIGNALS.includes(reason) ? (reason as StopSignal) : 'SIGINT');
}

/**
 * The first SIGINT or SIGTERM aborts the returned signal (its reason is the signal's name) and
 * prints the notice: a trainer finishes its step, saves a checkpoint and exits with 130 / 143;
 * `rl2 serve` stops. A second one calls `exit(128 + its number)` at once.
 */
export function interruptSignal(
  source: SignalSource,
  stderr: NodeJS.WritableStream,
  exit: (code: number) => void,
  options: InterruptOptions = {},
): AbortSignal {
  const controller = new AbortController();
  const { notice = SAVE_NOTICE, repeatWindowMs = 0, now = Date.now } = options;
  let firstAt = 0;
  for (const sig of STOP_SIGNALS) {
    source.on(sig, () => {
      if (!controller.signal.aborted) {
        firstAt = now();
        const again = sig === 'SIGINT' ? 'Ctrl-C again' : 'SIGTERM again';
        const what = notice === SAVE_NOTICE ? 'quit without saving' : 'quit at once';
        stderr.write(
          `\nrl2: ${sig === 'SIGINT' ? 'interrupted' : 'got SIGTERM'}; ${notice} (${again} to ${what})\n`,
        );
        controller.abort(sig);
      } else if (!(sig === controller.signal.reason && now() - firstAt < repeatWindowMs)) {
        exit(signalExitCode(sig));
      }
    });
  }
  return controller.signal;
}

/** The first signal's notice for `argv` (the arguments after `rl2`). */
export function interruptNotice(argv: readonly string[]): string {
  return argv[0] === 'serve' ? STOP_NOTICE : SAVE_NOTICE;
}
