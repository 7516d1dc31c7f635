// Helpers of the multi-process tests: a free port, the tiny train-case run on N launched ranks,
// safetensors read back, relative errors.
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { freePort, launch } from '@rl2/parallel';
import { runDpo } from '../src/dpo/run-dpo.js';
import type { MetricRecord } from '../src/metrics/metrics-log.js';
import { runSft } from '../src/sft/run-sft.js';
import { type CaseKind, caseConfig } from './train-case.js';

export { freePort };

/** The command that runs a script of test/ranks on source (tsx + the @rl2/* source hooks). */
export function rankCommand(script: string): string[] {
  const ranks = join(import.meta.dirname, 'ranks');
  return [
    process.execPath,
    '--import',
    'tsx',
    '--import',
    join(ranks, 'register-source.mjs'),
    join(ranks, script),
  ];
}

export interface StepResult {
  loss: number;
  gradNorm: number;
  microBatches: number;
  tokensPerSecond: number;
}

export interface RankResult {
  rank: number;
  steps: StepResult[];
  /** The tfjs backend the rank ended on, its `rl2 engine:` line, reads that waited for a GPU. */
  backend: string;
  engine?: string;
  /** Its `LoRA base tp rank r of n: ...` line (a 16-bit LoRA base under tp). */
  frozenShard?: string;
  blockingReads: number;
}

export interface RankRunOptions {
  /** This launch is one "node" of several on loopback (its ranks, the shared master port). */
  nodes?: { nnodes: number; nodeRank: number; masterPort: number };
  /**
   * RL2_COLLECTIVES for the ranks; the run fails unless local rank 0's start line
   * (`rl2 parallel: collectives on ...`) names it. Unset: the default, Gloo when its addon is
   * built (or whatever RL2_COLLECTIVES says in the test's own environment).
   */
  collectives?: 'gloo' | 'sockets';
}

/** The tiny run of train-case.ts on `n` processes (launch(), train.rank.ts); RESULT lines back, by rank. */
export async function runOnRanks(
  kind: CaseKind,
  n: number,
  caseDir: string,
  saveDir: string,
  overrides: string[] = [],
  { nodes, collectives }: RankRunOptions = {},
): Promise<RankResult[]> {
  const results: RankResult[] = [];
  const errors: string[] = [];
  let ranOn: string | undefined;
  await launch({
    nprocPerNode: n,
    ...(nodes ?? { masterPort: await freePort() }),
    output: 'silent',
    killGraceMs: 2000,
    command: rankCommand('train.rank.ts'),
    env: {
      CASE_KIND: kind,
      CASE_DIR: caseDir,
      SAVE_DIR: saveDir,
      CASE_OVERRIDES: JSON.stringify(overrides),
      ...(collectives ? { RL2_COLLECTIVES: collectives } : {}),
    },
    onOutput: (_rank, stream, line) => {
      if (stream === 'stdout' && line.startsWith('RESULT '))
        results.push(JSON.parse(line.slice(7)) as RankResult);
      else if (stream === 'stdout')
        ranOn = /rl2 parallel: collectives on (\w+)/.exec(line)?.[1] ?? ranOn;
      else if (stream === 'stderr') errors.push(line);
    },
  }).catch((err: Error) => {
    throw new Error(`${err.message}\n${errors.slice(-20).join('\n')}`);
  });
  if (collectives && ranOn !== collectives)
    throw new Error(`asked for RL2_COLLECTIVES=${collectives}, the ranks ran on ${ranOn}`);
  return results.sort((a, b) => a.rank - b.rank);
}

/** What the one-process run of a train case did: per-step loss and grad norm, and its step-2 checkpoint. */
export interface Reference {
  losses: number[];
  gradNorms: number[];
  weights: Map<string, Float32Array>;
  optimizer: Map<string, Float32Array>;
}

/** The train case run on this one process (no launcher environment: one rank), saved under `saveDir`. */
export async function runSingle(
  kind: CaseKind,
  caseDir: string,
  saveDir: string,
  overrides: string[] = [],
): Promise<Reference> {
  const losses: number[] = [];
  const gradNorms: number[] = [];
  const io = {
    stdout: { write: () => true } as unknown as NodeJS.WriteStream,
    onStep: (r: MetricRecord) => {
      losses.push(r['train/loss'] as number);
      gradNorms.push(r['train/grad_norm'] as number);
    },
  };
  if (kind === 'sft') await runSft(caseConfig('sft', caseDir, saveDir, overrides), io);
  else await runDpo(caseConfig('dpo', caseDir, saveDir, overrides), io);
  return {
    losses,
    gradNorms,
    weights: readSafetensors(join(saveDir, 'step-2/model/model.safetensors')),
    optimizer: readSafetensors(join(saveDir, 'step-2/optimizer.safetensors')),
  };
}

/** F32 tensors of a safetensors file (8-byte header length, JSON header, data). */
export function readSafetensors(file: string): Map<string, Float32Array> {
  const buf = readFileSync(file);
  const n = Number(buf.readBigUInt64LE(0));
  const header = JSON.parse(buf.subarray(8, 8 + n).toString('utf8')) as Record<
    string,
    { dtype: string; data_offsets: [number, number] }
  >;
  const out = new Map<string, Float32Array>();
  for (const [name, t] of Object.entries(header)) {
    if (name === '__metadata__') continue;
    if (t.dtype !== 'F32') throw new Error(`${file}: ${name} is ${t.dtype}, expected F32`);
    const bytes = buf.subarray(8 + n + t.data_offsets[0], 8 + n + t.data_offsets[1]);
    out.set(
      name,
      new Float32Array(bytes.buffer.slice(bytes.byteOffset, bytes.byteOffset + bytes.byteLength)),
    );
  }
  return out;
}

/** |a - b| / |b|. */
export const rel = (a: number, b: number) => Math.abs(a - b) / Math.max(Math.abs(b), 1e-12);

/** ||got - want|| / ||want|| over a tensor (infinite when the lengths differ). */
export function relTensor(got: Float32Array | undefined, want: Float32Array): number {
  if (!got || got.length !== want.length) return Number.POSITIVE_INFINITY;
  let num = 0;
  let den = 0;
  for (let i = 0; i < want.length; i++) {
    num += ((got[i] as number) - (want[i] as number)) ** 2;
    den += (want[i] as number) ** 2;
  }
  return Math.sqrt(num / Math.max(den, 1e-30));
}

/** What one rank of `ppoOnRanks` printed. */
export interface PpoRankResult {
  rank: number;
  steps: Record<string, number>[];
  tensorBytes: number;
  /** The tfjs backend the rank ended on; reads that waited for a GPU. */
  backend: string;
  blockingReads: number;
}

/** `rl2 ppo` with `overrides` on `n` launched ranks (rank processes on source); each rank's step metrics back. */
export async function ppoOnRanks(n: number, overrides: string[]): Promise<PpoRankResult[]> {
  const results: PpoRankResult[] = [];
  const errors: string[] = [];
  await launch({
    nprocPerNode: n,
    masterPort: await freePort(),
    output: 'silent',
    killGraceMs: 2000,
    command: rankCommand('ppo.rank.ts'),
    env: { PPO_OVERRIDES: JSON.stringify(overrides) },
    onOutput: (_rank, stream, line) => {
      if (stream === 'stdout' && line.startsWith('RESULT '))
        results.push(JSON.parse(line.slice(7)));
      else if (stream === 'stderr') errors.push(line);
    },
  }).catch((e: Error) => {
    throw new Error(`${e.message}\n${errors.join('\n')}`);
  });
  return results.sort((a, b) => a.rank - b.rank);
}
