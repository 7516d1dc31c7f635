import {
  InterruptedError,
  RankFailedError,
  type World,
  freePort,
  initProcessGroup,
  launch,
} from '@rl2/parallel';
import { RolloutError, resolveServeModel } from '@rl2/rollout';
import type { CliIo } from '../cli-io.js';

/** Set by `rl2 serve --tp N` for its ranks: the local folder of --model, resolved once. */
export const SERVE_MODEL_DIR_ENV = 'RL2_SERVE_MODEL_DIR';

const STOP_NOTICE_LINE = /^rl2: (interrupted|got SIG[A-Z]+); stopping/;

/**
 * `rl2 serve --tp N` typed by a user: runs N ranks of this same command (the launcher of
 * `rl2 launch`, on a free rendezvous port) and waits for them. Rank 0's lines are printed as
 * they are (it serves HTTP), the others' as `[rank R] line`. Ctrl-C and SIGTERM reach every
 * rank (the lead stops the server and releases the followers): exit 0 once they have stopped.
 * A failed rank stops the others; its error is printed and its exit code returned.
 * A hub id (`--model Qwen/Qwen3-0.6B`) is downloaded here, once, before the ranks start (not by
 * every rank into the same HF cache at once); the ranks load its snapshot folder.
 */
export async function launchServeRanks(tp: number, model: string, io: CliIo): Promise<number> {
  let dir: string;
  try {
    dir = await resolveServeModel(model, (line) => io.stdout.write(`${line}\n`));
  } catch (err) {
    throw new RolloutError('INVALID_ARGUMENT', `--model ${model}: ${(err as Error).message}`);
  }
  const write = (rank: number, stream: 'stdout' | 'stderr', line: string) => {
    // this process printed the interrupt notice already: the ranks' copies (and blank lines) go
    if (stream === 'stderr' && (line === '' || STOP_NOTICE_LINE.test(line))) return;
    (stream === 'stdout' ? io.stdout : io.stderr).write(
      rank === 0 ? `${line}\n` : `[rank ${rank}] ${line}\n`,
    );
  };
  try {
    await launch({
      nprocPerNode: tp,
      masterPort: await freePort(),
      command: [
        process.execPath,
        ...process.execArgv,
        process.argv[1] as string,
        ...process.argv.slice(2),
      ],
      env: { [SERVE_MODEL_DIR_ENV]: dir },
      output: 'silent',
      onOutput: write,
      killGraceMs: 5000,
      // the ranks save nothing: after Ctrl-C they stop in seconds, or are stopped
      interruptGraceMs: 15_000,
    });
    return 0;
  } catch (err) {
    if (err instanceof InterruptedError) return 0;
    if (!(err instanceof RankFailedError)) throw err;
    io.stderr.write(`rl2 serve --tp ${tp}: ${err.message}\n`);
    return err.exitCode || 1;
  }
}

/** Joins the launcher's world as one rank of `rl2 serve --tp N` (all of it is the tp group). */
export async function joinServeWorld(tp: number): Promise<World> {
  const world = await initProcessGroup({ logger: () => {} });
  if (world.size !== tp) {
    await world.close();
    throw new RolloutError(
      'INVALID_ARGUMENT',
      `rl2 serve --tp ${tp} runs as ${world.size} ranks (WORLD_SIZE=${world.size}); ` +
        'start it without a launcher, or launch exactly --tp processes',
    );
  }
  return world;
}
