/** Where the command writes, and the signal Ctrl-C aborts; injectable for tests. */
export interface CliIo {
  readonly stdout: NodeJS.WriteStream;
  readonly stderr: NodeJS.WriteStream;
  readonly signal?: AbortSignal;
}
