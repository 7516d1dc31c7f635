import { describe, expect, it } from 'vitest';
import { firstSlurmHost } from './first-slurm-host.js';
import { readLaunchEnv } from './read-launch-env.js';

describe('readLaunchEnv', () => {
  it('is a single process when no launcher variables are set', () => {
    expect(readLaunchEnv({})).toEqual({
      rank: 0,
      worldSize: 1,
      localRank: 0,
      localWorldSize: 1,
      nodeRank: 0,
      masterAddr: '127.0.0.1',
      masterPort: 29500,
      source: 'single',
    });
  });

  it('reads torchrun / rl2 launch variables', () => {
    const env = {
      RANK: '5',
      WORLD_SIZE: '8',
      LOCAL_RANK: '1',
      LOCAL_WORLD_SIZE: '4',
      GROUP_RANK: '1',
      MASTER_ADDR: '10.0.0.1',
      MASTER_PORT: '1234',
    };
    expect(readLaunchEnv(env)).toEqual({
      rank: 5,
      worldSize: 8,
      localRank: 1,
      localWorldSize: 4,
      nodeRank: 1,
      masterAddr: '10.0.0.1',
      masterPort: 1234,
      source: 'torchrun',
    });
  });

  it('reads a Kubernetes PyTorchJob pod (no LOCAL_RANK: one process per pod)', () => {
    const e = readLaunchEnv({
      RANK: '2',
      WORLD_SIZE: '4',
      MASTER_ADDR: 'job-master-0',
      MASTER_PORT: '23456',
    });
    expect(e).toMatchObject({
      rank: 2,
      worldSize: 4,
      localRank: 0,
      localWorldSize: 1,
      nodeRank: 2,
      masterAddr: 'job-master-0',
      masterPort: 23456,
      source: 'pytorchjob',
    });
  });

  it('reads Open MPI variables', () => {
    const e = readLaunchEnv({
      OMPI_COMM_WORLD_RANK: '3',
      OMPI_COMM_WORLD_SIZE: '4',
      OMPI_COMM_WORLD_LOCAL_RANK: '1',
      OMPI_COMM_WORLD_LOCAL_SIZE: '2',
      MASTER_ADDR: 'n0',
    });
    expect(e).toMatchObject({
      rank: 3,
      worldSize: 4,
      localRank: 1,
      localWorldSize: 2,
      nodeRank: 1,
      masterAddr: 'n0',
      source: 'openmpi',
    });
  });

  it('reads Slurm variables and takes the first node of the job as master', () => {
    const e = readLaunchEnv({
      SLURM_PROCID: '6',
      SLURM_NTASKS: '8',
      SLURM_LOCALID: '2',
      SLURM_NODEID: '1',
      SLURM_TASKS_PER_NODE: '4(x2)',
      SLURM_JOB_NODELIST: 'gpu[07-08]',
    });
    expect(e).toEqual({
      rank: 6,
      worldSize: 8,
      localRank: 2,
      localWorldSize: 4,
      nodeRank: 1,
      masterAddr: 'gpu07',
      masterPort: 29500,
      source: 'slurm',
    });
  });

  it('prefers torchrun variables over Slurm ones (torchrun started by srun)', () => {
    expect(
      readLaunchEnv({
        SLURM_PROCID: '0',
        SLURM_NTASKS: '1',
        RANK: '3',
        WORLD_SIZE: '4',
        LOCAL_RANK: '3',
      }).source,
    ).toBe('torchrun');
  });

  it.each([
    [{ RANK: '4', WORLD_SIZE: '4', LOCAL_RANK: '0' }, /RANK=4 must be < WORLD_SIZE=4/],
    [{ RANK: '1', LOCAL_RANK: '1' }, /WORLD_SIZE is not set/],
    [{ RANK: 'x', WORLD_SIZE: '2', LOCAL_RANK: '0' }, /RANK="x" must be an integer/],
    [
      { RANK: '1', WORLD_SIZE: '4', LOCAL_RANK: '2', LOCAL_WORLD_SIZE: '2', MASTER_ADDR: 'a' },
      /LOCAL_RANK=2 must be < LOCAL_WORLD_SIZE=2/,
    ],
    [
      { RANK: '1', WORLD_SIZE: '6', LOCAL_RANK: '1', LOCAL_WORLD_SIZE: '4', MASTER_ADDR: 'a' },
      /WORLD_SIZE=6 is not a multiple of LOCAL_WORLD_SIZE=4/,
    ],
    [
      { RANK: '1', WORLD_SIZE: '4', LOCAL_RANK: '1', LOCAL_WORLD_SIZE: '2' },
      /MASTER_ADDR is not set/,
    ],
    [{ RANK: '1', WORLD_SIZE: '2' }, /PyTorchJob.*MASTER_ADDR/],
    [
      { OMPI_COMM_WORLD_RANK: '0', OMPI_COMM_WORLD_SIZE: '4', OMPI_COMM_WORLD_LOCAL_SIZE: '2' },
      /-x MASTER_ADDR/,
    ],
    [{ SLURM_PROCID: '3', SLURM_NTASKS: '2' }, /SLURM_PROCID=3 must be < SLURM_NTASKS=2/],
    [{ MASTER_PORT: '70000' }, /MASTER_PORT="70000" is not a TCP port/],
  ])('rejects inconsistent values %j', (env, message) => {
    expect(() => readLaunchEnv(env)).toThrow(message);
  });
});

describe('firstSlurmHost', () => {
  it.each([
    ['node[03-05,07],gpu1', 'node03'],
    ['a1,b2', 'a1'],
    ['host', 'host'],
    ['gpu-[1-2]', 'gpu-1'],
  ])('%s -> %s', (list, host) => expect(firstSlurmHost(list)).toBe(host));
  it('names the variable when it cannot read the list', () => {
    expect(() => firstSlurmHost('')).toThrow(/SLURM_JOB_NODELIST/);
  });
});
