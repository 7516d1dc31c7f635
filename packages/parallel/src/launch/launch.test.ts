import { describe, expect, it } from 'vitest';
import { ParallelError } from '../errors.js';
import { launch, rankEnv } from './launch.js';

const sleeper = [process.execPath, '-e', 'setTimeout(() => {}, 60000)'];

describe('launch', () => {
  it('gives each rank the torchrun environment', () => {
    expect(
      rankEnv(
        { nprocPerNode: 4, nnodes: 2, nodeRank: 1, masterAddr: '10.0.0.1', masterPort: 29500 },
        2,
      ),
    ).toEqual({
      RANK: '6',
      LOCAL_RANK: '2',
      WORLD_SIZE: '8',
      LOCAL_WORLD_SIZE: '4',
      GROUP_RANK: '1',
      NODE_RANK: '1',
      MASTER_ADDR: '10.0.0.1',
      MASTER_PORT: '29500',
    });
  });

  it('runs every rank to completion and reports exit codes', async () => {
    const seen: string[] = [];
    const r = await launch({
      nprocPerNode: 2,
      command: [
        process.execPath,
        '-e',
        'console.log(process.env.RANK + "/" + process.env.WORLD_SIZE)',
      ],
      output: 'silent',
      onOutput: (rank, _s, line) => seen.push(`${rank}:${line}`),
    });
    expect(r.ranks).toEqual([
      { rank: 0, localRank: 0, exitCode: 0 },
      { rank: 1, localRank: 1, exitCode: 0 },
    ]);
    expect(seen.sort()).toEqual(['0:0/2', '1:1/2']);
  });

  it('an abort stops every rank instead of waiting for them', async () => {
    const ac = new AbortController();
    const run = launch({
      nprocPerNode: 2,
      command: sleeper,
      output: 'silent',
      signal: ac.signal,
      killGraceMs: 1000,
    });
    setTimeout(() => ac.abort('test'), 300);
    await expect(run).rejects.toMatchObject({ code: 'INTERRUPTED' });
  });

  it('passes Ctrl-C on to every rank so they can save and exit; a second one stops them', async () => {
    // Each rank acknowledges SIGINT and exits 130 after a moment, as a trainer does after saving.
    const saver = [
      process.execPath,
      '-e',
      'process.on("SIGINT", () => { console.log("saving"); setTimeout(() => process.exit(130), 200); }); ' +
        'console.log("ready"); setTimeout(() => {}, 60000)',
    ];
    const seen: string[] = [];
    let ready = 0;
    const run = launch({
      nprocPerNode: 2,
      command: saver,
      output: 'silent',
      onOutput: (rank, _s, line) => {
        seen.push(`${rank}:${line}`);
        if (line === 'ready' && ++ready === 2) process.emit('SIGINT', 'SIGINT');
      },
    });
    await expect(run).rejects.toMatchObject({ code: 'INTERRUPTED' });
    expect(seen.filter((l) => l.endsWith(':saving')).sort()).toEqual(['0:saving', '1:saving']);

    const stubborn = [
      process.execPath,
      '-e',
      'process.on("SIGINT", () => console.log("ignoring")); console.log("ready"); setTimeout(() => {}, 60000)',
    ];
    let ignored = 0;
    const started = Date.now();
    const hard = launch({
      nprocPerNode: 2,
      command: stubborn,
      output: 'silent',
      killGraceMs: 500,
      onOutput: (_r, _s, line) => {
        if (line === 'ready' && ++ready === 4) process.emit('SIGINT', 'SIGINT');
        if (line === 'ignoring' && ++ignored === 2) process.emit('SIGINT', 'SIGINT');
      },
    });
    await expect(hard).rejects.toMatchObject({ code: 'INTERRUPTED' });
    expect(ignored).toBe(2);
    expect(Date.now() - started).toBeLessThan(30_000);
  });

  it('a command that cannot start fails at once, naming it', async () => {
    await expect(
      launch({ nprocPerNode: 2, command: ['/nonexistent/rl2-prog'], output: 'silent' }),
    ).rejects.toThrow(/cannot start "\/nonexistent\/rl2-prog"/);
  });

  it('rejects bad options with the flag to fix', () => {
    expect(() => launch({ nprocPerNode: 0, command: sleeper })).toThrow(ParallelError);
    expect(() => launch({ nprocPerNode: 1, nnodes: 2, nodeRank: 2, command: sleeper })).toThrow(
      /nodeRank=2 must be < nnodes=2/,
    );
    expect(() => launch({ nprocPerNode: 1, command: [] })).toThrow(/command is empty/);
  });
});
