import { type ChildProcess, spawn } from 'node:child_process';
import { InterruptedError, ParallelError, RankFailedError } from '../errors.js';
import { DEFAULT_MASTER_PORT } from './read-launch-env.js';
import { startRankWatchdog } from './rank-watchdog.js';

/** Options of {@link launch}; the names follow torchrun's flags. */
export interface LaunchOptions {
  /** Processes on this node (`--nproc-per-node`). */
  nprocPerNode: number;
  /** Nodes in the job (`--nnodes`, default 1). */
  nnodes?: number;
  /** Index of this node (`--node-rank`, default 0). */
  nodeRank?: number;
  /** Host of global rank 0 (`--master-addr`, default 127.0.0.1). */
  masterAddr?: string;
  /** Rendezvous port on the master (`--master-port`, default 29500). */
  masterPort?: number;
  /** Program and arguments run once per rank, e.g. `['rl2', 'ppo', 'actor.lr=1e-6']`. */
  command: readonly string[];
  /** Extra environment for every rank (added to process.env). */
  env?: Record<string, string>;
  /**
   * What to do with the ranks' stdout/stderr: `prefix` (default) forwards each line as
   * `[rank N] line`; `inherit` forwards raw; `silent` drops it (the stderr tail is still kept
   * for errors). `onOutput` sees every line either way.
   */
  output?: 'prefix' | 'inherit' | 'silent';
  onOutput?: (rank: number, stream: 'stdout' | 'stderr', line: string) => void;
  /** Aborting stops every rank (SIGTERM, then SIGKILL after `killGraceMs`). */
  signal?: AbortSignal;
  /** Grace between SIGTERM and SIGKILL when stopping ranks (default 5000 ms). */
  killGraceMs?: number;
  /**
   * After a SIGINT / SIGTERM is passed on to the ranks, how long they may take to save and exit
   * before SIGTERM again (default 120000 ms).
   */
  interruptGraceMs?: number;
  /** After the first rank fails, how long the others may still exit on their own before SIGTERM (default 1000 ms). */
  settleMs?: number;
  /** Bytes of stderr kept per rank for the error report (default 4096). */
  stderrTailBytes?: number;
  /**
   * While ranks run, SIGINT and SIGTERM to this process are passed on to every rank (trainers save
   * and exit; a second signal stops them at once), SIGHUP stops every rank, and the launch rejects
   * with an {@link InterruptedError} instead of leaving them orphaned (ranks run in their own
   * process groups, so a terminal's Ctrl-C does not reach them directly). Default true.
   */
  forwardSignals?: boolean;
}

/** How every rank of this node ended. */
export interface LaunchResult {
  ranks: { rank: number; localRank: number; exitCode: number }[];
}

function positiveInt(name: string, v: number, min: number): number {
  if (!Number.isInteger(v) || v < min)
    throw new ParallelError('INVALID_ARGUMENT', `${name}=${v} must be an integer >= ${min}.`);
  return v;
}

/** The environment torchrun gives local rank `localRank`, plus NODE_RANK for launchers that read it. */
export function rankEnv(
  o: Required<
    Pick<LaunchOptions, 'nprocPerNode' | 'nnodes' | 'nodeRank' | 'masterAddr' | 'masterPort'>
  >,
  localRank: number,
): Record<string, string> {
  return {
    RANK: String(o.nodeRank * o.nprocPerNode + localRank),
    LOCAL_RANK: String(localRank),
    WORLD_SIZE: String(o.nnodes * o.nprocPerNode),
    LOCAL_WORLD_SIZE: String(o.nprocPerNode),
    GROUP_RANK: String(o.nodeRank),
    NODE_RANK: String(o.nodeRank),
    MASTER_ADDR: o.masterAddr,
    MASTER_PORT: String(o.masterPort),
  };
}

/**
 * Start `nprocPerNode` copies of `command` on this node, each with the torchrun environment
 * (RANK, LOCAL_RANK, WORLD_SIZE, LOCAL_WORLD_SIZE, GROUP_RANK, MASTER_ADDR, MASTER_PORT).
 * Resolves when every rank exits 0. When one rank fails, every other rank is stopped
 * (SIGTERM to its process group, SIGKILL after the grace) and the promise rejects with a
 * {@link RankFailedError} carrying that rank's exit code and stderr tail. Ranks on other
 * nodes notice through their collectives (PEER_LOST) and fail in turn, so nothing hangs.
 *
 * For the CLI: `rl2 launch --nproc-per-node N [--nnodes M --node-rank R --master-addr A
 * --master-port P] -- rl2 ppo ...` maps one to one onto these options; exit with
 * `err.exitCode ?? 1` on RankFailedError and 128 + the signal's number on InterruptedError.
 */
export function launch(options: LaunchOptions): Promise<LaunchResult> {
  const o = {
    nprocPerNode: positiveInt('nprocPerNode', options.nprocPerNode, 1),
    nnodes: positiveInt('nnodes', options.nnodes ?? 1, 1),
    nodeRank: positiveInt('nodeRank', options.nodeRank ?? 0, 0),
    masterAddr: options.masterAddr ?? '127.0.0.1',
    masterPort: positiveInt('masterPort', options.masterPort ?? DEFAULT_MASTER_PORT, 1),
  };
  if (o.nodeRank >= o.nnodes)
    throw new ParallelError(
      'INVALID_ARGUMENT',
      `nodeRank=${o.nodeRank} must be < nnodes=${o.nnodes} (--node-rank counts from 0).`,
    );
  if (o.masterPort > 65535)
    throw new ParallelError(
      'INVALID_ARGUMENT',
      `masterPort=${o.masterPort} is not a TCP port (1..65535).`,
    );
  const [program, ...args] = options.command;
  if (!program)
    throw new ParallelError(
      'INVALID_ARGUMENT',
      'command is empty: pass the program to run per rank, e.g. ["rl2", "ppo", ...].',
    );
  const output = options.output ?? 'prefix';
  const grace = options.killGraceMs ?? 5000;
  const interruptGrace = options.interruptGraceMs ?? 120_000;
  const settleMs = options.settleMs ?? 1000;
  const tailBytes = options.stderrTailBytes ?? 4096;

  return new Promise((resolve, reject) => {
    const children: ChildProcess[] = [];
    const tails: string[] = [];
    const exits: (LaunchResult['ranks'][number] | undefined)[] = [];
    let failure: Error | undefined;
    // ranks that failed on their own, in exit order; the root cause is chosen when all are down
    const failed: { localRank: number; code: number | null; signal: string | null }[] = [];
    let killTimer: NodeJS.Timeout | undefined;
    let settleTimer: NodeJS.Timeout | undefined;
    let terminated = false; // SIGTERM sent: later signal deaths are ours, not failures
    let running = o.nprocPerNode;
    const watchdog = startRankWatchdog(grace);

    const terminate = () => {
      if (terminated) return;
      terminated = true;
      clearTimeout(killTimer);
      for (const c of children) kill(c, 'SIGTERM');
      killTimer = setTimeout(() => {
        for (const c of children) kill(c, 'SIGKILL');
      }, grace);
      killTimer.unref();
    };
    // A failing rank often takes others down with it (they lose their peer) before it has finished
    // exiting itself: wait `settleMs` before stopping the rest, so the real failure exits on its own
    // and can be told apart from the ranks that only lost it.
    const stopAll = (err: Error, settle = true) => {
      if (failure) return;
      failure = err;
      if (!settle || settleMs === 0) return terminate();
      settleTimer = setTimeout(terminate, settleMs);
      settleTimer.unref();
    };
    const onParentExit = () => {
      for (const c of children) kill(c, 'SIGKILL');
      watchdog.release();
    };
    const onAbort = () =>
      stopAll(
        new InterruptedError(
          null,
          `launch aborted: ${String(options.signal?.reason ?? 'signal')}; every rank was stopped.`,
        ),
        false,
      );
    // Ctrl-C and SIGTERM (what Slurm and Kubernetes send before they stop a job) are passed on
    // (ranks run in their own process groups, so the terminal's SIGINT does not reach them):
    // trainers finish their step, save a checkpoint and exit. A second signal, or
    // `interruptGraceMs` without them exiting, stops them hard.
    let interrupting = false;
    const onSignal = (sig: NodeJS.Signals) => {
      if (interrupting) return terminate();
      if (sig === 'SIGHUP' || failure)
        return stopAll(
          new InterruptedError(sig, `launch got ${sig}; every rank was stopped.`),
          false,
        );
      interrupting = true;
      failure = new InterruptedError(
        sig,
        `launch got ${sig}; every rank was asked to stop (trainers save a checkpoint first).`,
      );
      for (const c of children) kill(c, sig);
      killTimer = setTimeout(terminate, interruptGrace);
      killTimer.unref();
    };
    const signals: NodeJS.Signals[] =
      options.forwardSignals === false ? [] : ['SIGINT', 'SIGTERM', 'SIGHUP'];
    process.once('exit', onParentExit);
    for (const sig of signals) process.on(sig, onSignal);
    options.signal?.addEventListener('abort', onAbort, { once: true });

    const finish = () => {
      clearTimeout(settleTimer);
      clearTimeout(killTimer);
      process.removeListener('exit', onParentExit);
      watchdog.release();
      for (const sig of signals) process.removeListener(sig, onSignal);
      options.signal?.removeEventListener('abort', onAbort);
      if (failure && (failure as ParallelError).code === 'INTERRUPTED') return reject(failure);
      const cause = rootCause(failed, tails);
      if (cause)
        reject(
          new RankFailedError(
            o.nodeRank * o.nprocPerNode + cause.localRank,
            cause.code,
            cause.signal,
            tails[cause.localRank]!,
          ),
        );
      else if (failure) reject(failure);
      else resolve({ ranks: exits.map((e) => e!) });
    };

    for (let localRank = 0; localRank < o.nprocPerNode; localRank++) {
      const env = { ...process.env, ...options.env, ...rankEnv(o, localRank) };
      const rank = Number(env.RANK);
      tails[localRank] = '';
      const child = spawn(program, args, {
        env,
        detached: true,
        stdio: ['ignore', 'pipe', 'pipe'],
      });
      children.push(child);
      if (child.pid !== undefined) watchdog.watch(rank, child.pid);
      const forward = (stream: 'stdout' | 'stderr') => {
        let partial = '';
        const sink = stream === 'stdout' ? process.stdout : process.stderr;
        child[stream]!.on('data', (chunk: Buffer) => {
          const text = chunk.toString('utf8');
          if (stream === 'stderr') tails[localRank] = (tails[localRank]! + text).slice(-tailBytes);
          if (output === 'inherit') sink.write(chunk);
          const lines = (partial + text).split('\n');
          partial = lines.pop()!;
          for (const line of lines) {
            options.onOutput?.(rank, stream, line);
            if (output === 'prefix') sink.write(`[rank ${rank}] ${line}\n`);
          }
        });
        child[stream]!.on('end', () => {
          if (!partial) return;
          options.onOutput?.(rank, stream, partial);
          if (output === 'prefix') sink.write(`[rank ${rank}] ${partial}\n`);
        });
      };
      forward('stdout');
      forward('stderr');
      child.on('error', (err) => {
        stopAll(
          new ParallelError(
            'RANK_FAILED',
            `rank ${rank}: cannot start "${program}": ${err.message}; check the command after --.`,
          ),
        );
      });
      child.on('exit', (code, signal) => {
        if (code !== 0 && (code !== null || !terminated)) failed.push({ localRank, code, signal });
        if (code !== 0) stopAll(new RankFailedError(rank, code, signal, tails[localRank]!));
      });
      child.on('close', (code) => {
        exits[localRank] = { rank, localRank, exitCode: code ?? -1 };
        running -= 1;
        if (running === 0) finish();
      });
    }
  });
}

/**
 * The rank to blame: among ranks that failed before they were told to stop, the first one
 * whose error is not just "lost another rank" (PEER_LOST follows the real failure elsewhere).
 */
function rootCause<T extends { localRank: number }>(failed: T[], tails: string[]): T | undefined {
  return failed.find((f) => !tails[f.localRank]!.includes('PEER_LOST')) ?? failed[0];
}

function kill(child: ChildProcess, signal: NodeJS.Signals): void {
  if (child.exitCode !== null || child.signalCode !== null || child.pid === undefined) return;
  try {
    process.kill(-child.pid, signal); // the whole process group: wrappers and their children too
  } catch {
    try {
      child.kill(signal);
    } catch {
      // already gone
    }
  }
}
