/** The slice of `process` the Ctrl-C handling needs; a fake in tests. */
export interface SignalSource {
  on(event: 'SIGINT', listener: () => void): unknown;
}

/**
 * First Ctrl-C aborts the returned signal: the trainer finishes its step, saves a
 * checkpoint and exits with 130. A second Ctrl-C calls `exit(130)` at once.
 */
export function interruptSignal(source: SignalSource, stderr: NodeJS.WritableStream, exit: (code: number) => void): AbortSignal {
  const controller = new AbortController();
  source.on('SIGINT', () => {
    if (controller.signal.aborted) {
      exit(130);
      return;
    }
    stderr.write('\nrl2: interrupted; saving a checkpoint after this step (Ctrl-C again to quit without saving)\n');
    controller.abort();
  });
  return controller.signal;
}
