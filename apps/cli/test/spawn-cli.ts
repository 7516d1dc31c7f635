import { type ChildProcess, spawn } from 'node:child_process';
import { resolve } from 'node:path';

// The real process, from source (tsx, @rl2/* resolved to packages/*/src as vitest does): exit
// codes, signals and threads that keep a process alive can only be seen from outside it.
const hooks = resolve(
  import.meta.dirname,
  '../../../packages/trainers/test/ranks/register-source.mjs',
);
const cliArgs = [
  '--import',
  'tsx',
  '--import',
  hooks,
  resolve(import.meta.dirname, '../src/cli.ts'),
];

/** A running `rl2 ...argv` process: its child, everything it printed so far, and its exit code once it ends. */
export interface CliProcess {
  readonly child: ChildProcess;
  output(): string;
  readonly exited: Promise<number | null>;
}

/** Starts `rl2 ...argv`; `onText` sees the output (stdout and stderr together) as it grows, e.g. to send a signal at a step. */
export function spawnCli(
  argv: string[],
  onText?: (all: string, child: ChildProcess) => void,
): CliProcess {
  const child = spawn(process.execPath, [...cliArgs, ...argv], {
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  let out = '';
  const take = (b: Buffer) => {
    out += String(b);
    onText?.(out, child);
  };
  child.stdout?.on('data', take);
  child.stderr?.on('data', take);
  const exited = new Promise<number | null>((done) => child.on('close', (code) => done(code)));
  return { child, output: () => out, exited };
}
