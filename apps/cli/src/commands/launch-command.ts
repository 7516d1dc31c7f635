import { basename } from 'node:path';
import { InterruptedError, RankFailedError, launch } from '@rl2/parallel';
import { TrainersError } from '@rl2/trainers';
import type { CAC } from 'cac';
import type { CliIo } from '../cli-io.js';
import { signalExitCode } from '../interrupt.js';

/**
 * The program each rank runs. A leading `rl2` means this very CLI (same node, same script, same
 * loader flags) when it runs as its own script, so `rl2 launch -- rl2 sft ...` works without
 * `rl2` on PATH; anything else runs as given.
 */
export function rankCommand(
  command: readonly string[],
  self: { execPath: string; execArgv: readonly string[]; script?: string },
): string[] {
  const [program, ...args] = command;
  const isCli = self.script !== undefined && /^(rl2|cli\.[cm]?[jt]s)$/.test(basename(self.script));
  if (program === 'rl2' && isCli)
    return [self.execPath, ...self.execArgv, self.script as string, ...args];
  return [...command];
}

function int(flag: string, value: unknown, min: number): number | undefined {
  if (value === undefined) return undefined;
  const n = Number(value);
  if (!Number.isInteger(n) || n < min)
    throw new TrainersError(
      'INVALID_ARGUMENT',
      `rl2 launch: --${flag} ${String(value)} must be an integer >= ${min}`,
    );
  return n;
}

/**
 * Registers `rl2 launch --nproc-per-node N [--nnodes M --node-rank R --master-addr A
 * --master-port P] -- COMMAND ...` (torchrun's flags): N ranks of COMMAND with RANK, WORLD_SIZE,
 * LOCAL_RANK, MASTER_ADDR, MASTER_PORT set; output lines prefixed `[rank N]`. When a rank fails
 * every rank is stopped, its error is printed and the exit code is that rank's; Ctrl-C or SIGTERM
 * reaches every rank (trainers save, then exit) and the exit code is 130 / 143.
 */
export function registerLaunchCommand(cli: CAC, io: CliIo): void {
  cli
    .command(
      'launch',
      'run a command on N processes per node (like torchrun): rl2 launch --nproc-per-node 2 -- rl2 sft ...',
    )
    .usage(
      'launch --nproc-per-node N [--nnodes M --node-rank R --master-addr HOST --master-port PORT] -- COMMAND ...',
    )
    .option('--nproc-per-node <n>', 'processes on this node')
    .option('--nnodes <n>', 'nodes in the job', { default: 1 })
    .option('--node-rank <n>', 'index of this node, from 0', { default: 0 })
    .option('--master-addr <host>', 'host of rank 0 (every node passes the same)', {
      default: '127.0.0.1',
    })
    .option('--master-port <port>', 'rendezvous port on the master', { default: 29500 })
    .example('rl2 launch --nproc-per-node 2 -- rl2 sft --config examples/addition/sft.yaml')
    .example(
      'rl2 launch --nproc-per-node 2 --nnodes 2 --node-rank 0 --master-addr 10.0.0.1 -- rl2 sft ...',
    )
    .action(async (flags: Record<string, unknown>) => {
      const nprocPerNode = int('nproc-per-node', flags.nprocPerNode, 1);
      if (nprocPerNode === undefined)
        throw new TrainersError(
          'INVALID_ARGUMENT',
          'rl2 launch needs --nproc-per-node N (processes on this node)',
        );
      const command = (flags['--'] as string[] | undefined) ?? [];
      if (command.length === 0)
        throw new TrainersError(
          'INVALID_ARGUMENT',
          'rl2 launch needs the command after --, e.g. rl2 launch --nproc-per-node 2 -- rl2 sft --config sft.yaml',
        );
      const write = (rank: number, stream: 'stdout' | 'stderr', line: string) =>
        (stream === 'stdout' ? io.stdout : io.stderr).write(`[rank ${rank}] ${line}\n`);
      try {
        await launch({
          nprocPerNode,
          nnodes: int('nnodes', flags.nnodes, 1),
          nodeRank: int('node-rank', flags.nodeRank, 0),
          masterAddr: String(flags.masterAddr),
          masterPort: int('master-port', flags.masterPort, 1),
          command: rankCommand(command, {
            execPath: process.execPath,
            execArgv: process.execArgv,
            script: process.argv[1],
          }),
          output: 'silent',
          onOutput: write,
          // No abort signal: launch() itself passes Ctrl-C and SIGTERM on to the ranks, which save and exit.
        });
        return 0;
      } catch (err) {
        if (err instanceof InterruptedError) {
          io.stderr.write(`rl2 launch: ${err.message}\n`);
          return signalExitCode(err.signal ?? 'SIGINT');
        }
        if (!(err instanceof RankFailedError)) throw err;
        io.stderr.write(`rl2 launch: ${err.message}\n`);
        return err.exitCode || 1;
      }
    });
}
