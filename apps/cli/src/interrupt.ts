/** The slice of `process` the Ctrl-C handling needs; a fake in tests. */
export interface SignalSource {
  on(event: 'SIGINT', listener: () => void): unknown;
}

/** What a trainer does on the first Ctrl-C. */
export const SAVE_NOTICE = 'saving a checkpoint after this step (Ctrl-C again to quit without saving)';

/** What the first Ctrl-C does to a command that saves nothing (`rl2 serve`). */
export const STOP_NOTICE = 'stopping (Ctrl-C again to quit at once)';

/**
 * First Ctrl-C aborts the returned signal and prints `notice` (a trainer finishes its step,
 * saves a checkpoint and exits with 130; `rl2 serve` stops). A second Ctrl-C calls
 * `exit(130)` at once.
 */
export function interruptSignal(source: SignalSource, stderr: NodeJS.WritableStream, exit: (code: number) => void, notice = SAVE_NOTICE): AbortSignal {
  const controller = new AbortController();
  source.on('SIGINT', () => {
    if (controller.signal.aborted) {
      exit(130);
      return;
    }
    stderr.write(`\nrl2: interrupted; ${notice}\n`);
    controller.abort();
  });
  return controller.signal;
}

/** The first Ctrl-C's notice for `argv` (the arguments after `rl2`). */
export function interruptNotice(argv: readonly string[]): string {
  return argv[0] === 'serve' ? STOP_NOTICE : SAVE_NOTICE;
}
