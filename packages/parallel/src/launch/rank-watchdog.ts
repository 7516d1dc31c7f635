import { spawn } from 'node:child_process';

/**
 * The watchdog's program. It reads `rank R pid P` lines on stdin; `done` means the launcher
 * finished (exit quietly). Stdin closing without `done` means the launcher died (SIGKILL, OOM
 * killer): it stops each rank's process group with SIGTERM (trainers save and exit), then
 * SIGKILL after the grace (argv[1], ms), and says so on stderr.
 */
const WATCHDOG = `
const [launcher, grace] = [process.argv[1], Number(process.argv[2])];
const ranks = new Map();
let input = '', done = false;
const kill = (pid, sig) => { try { process.kill(-pid, sig); } catch { try { process.kill(pid, sig); } catch {} } };
process.stdin.setEncoding('utf8');
process.stdin.on('data', (chunk) => {
  input += chunk;
  const lines = input.split('\\n');
  input = lines.pop();
  for (const line of lines) {
    const m = /^rank (\\d+) pid (\\d+)$/.exec(line);
    if (m) ranks.set(Number(m[1]), Number(m[2]));
    if (line === 'done') done = true;
  }
});
process.stdin.on('end', () => {
  if (done || ranks.size === 0) process.exit(0);
  process.stderr.on('error', () => {});
  process.stderr.write('rl2 launch (pid ' + launcher + ') is gone: stopping its ranks [' +
    [...ranks.keys()].join(', ') + '] (SIGTERM, SIGKILL after ' + grace + ' ms)\\n');
  for (const pid of ranks.values()) kill(pid, 'SIGTERM');
  setTimeout(() => { for (const pid of ranks.values()) kill(pid, 'SIGKILL'); process.exit(0); }, grace);
});
`;

/** What `launch` tells its watchdog. */
export interface RankWatchdog {
  /** Rank `rank` runs as process (group) `pid`. */
  watch(rank: number, pid: number): void;
  /** The launch finished: the watchdog exits without touching anything. */
  release(): void;
}

/**
 * Starts the process that stops this launch's ranks if the launcher dies without stopping them
 * itself (`kill -9`: no handler runs, and the ranks, in their own process groups, would run on
 * as orphans). It holds the read end of a pipe whose only writer is the launcher; the kernel
 * closes it however the launcher ends. No-op on Windows (no process groups).
 */
export function startRankWatchdog(graceMs: number): RankWatchdog {
  if (process.platform === 'win32') return { watch() {}, release() {} };
  const dog = spawn(process.execPath, ['-e', WATCHDOG, String(process.pid), String(graceMs)], {
    detached: true, // a terminal's Ctrl-C goes to the launcher's group, not to the watchdog
    stdio: ['pipe', 'ignore', 'inherit'],
  });
  dog.on('error', () => {}); // no watchdog: ranks may outlive a killed launcher, as before
  dog.stdin.on('error', () => {});
  dog.unref();
  (dog.stdin as unknown as { unref?: () => void }).unref?.();
  return {
    watch: (rank, pid) => {
      dog.stdin.write(`rank ${rank} pid ${pid}\n`);
    },
    release: () => {
      dog.stdin.end('done\n');
    },
  };
}
