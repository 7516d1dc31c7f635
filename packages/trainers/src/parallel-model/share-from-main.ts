import { RolloutError, type RolloutErrorCode } from '@rl2/rollout';
import { TrainersError, type TrainersErrorCode } from '../errors.js';
import type { DataParallel } from './data-parallel.js';

/** What rank 0 sends: its value, or the error it threw (rebuilt with the same class and code on every rank). */
type Outcome<T> = { ok: T } | { error: { name: string; code?: string; message: string } };

/**
 * Runs `produce` on rank 0 alone and hands its result to every rank (JSON, so plain data:
 * numbers round-trip exactly, undefined becomes null). When `produce` throws, every rank throws
 * the same RolloutError / TrainersError (class and code kept), so the ranks leave together
 * instead of the others waiting in a collective for a rank that is gone.
 * Every rank must call it at the same point; on one process it just runs `produce`.
 */
export async function shareFromMain<T>(dp: DataParallel, produce: () => Promise<T>): Promise<T> {
  if (dp.size === 1) return produce();
  let sent: Uint8Array | undefined;
  let thrown: { error: unknown } | undefined;
  if (dp.rank === 0) {
    let outcome: Outcome<T>;
    try {
      outcome = { ok: await produce() };
    } catch (e) {
      thrown = { error: e };
      const err = e as Error & { code?: string };
      outcome = {
        error: {
          name: err.name ?? 'Error',
          ...(err.code ? { code: err.code } : {}),
          message: err.message ?? String(e),
        },
      };
    }
    sent = new TextEncoder().encode(JSON.stringify(outcome));
  }
  const received = shareBytes(dp, sent);
  if (thrown) throw thrown.error; // rank 0 keeps its own error, stack and cause included
  const outcome = JSON.parse(new TextDecoder().decode(received)) as Outcome<T>;
  if ('error' in outcome) throw rebuildError(outcome.error);
  return (outcome.ok ?? undefined) as T;
}

/** rank 0's bytes on every rank: the length first, then the bytes (a raw broadcast, or packed 3 bytes per float into a sum). */
function shareBytes(dp: DataParallel, bytes: Uint8Array | undefined): Uint8Array {
  const header = new Float32Array(2);
  if (bytes) header.set([Math.floor(bytes.length / 2 ** 20), bytes.length % 2 ** 20]);
  const [hi, lo] = dp.allReduceSum(header);
  const n = (hi as number) * 2 ** 20 + (lo as number);
  if (dp.group) {
    const buf = new Float32Array(Math.ceil(n / 4));
    if (bytes) new Uint8Array(buf.buffer).set(bytes);
    const got = dp.group.broadcast(buf, 0);
    return new Uint8Array(got.buffer, got.byteOffset, n);
  }
  // integers below 2^24 are exact in float32: three bytes per value survive a sum with zeros
  const packed = new Float32Array(Math.ceil(n / 3));
  if (bytes)
    for (let i = 0; i < n; i++) packed[Math.floor(i / 3)] += (bytes[i] as number) * 256 ** (i % 3);
  const summed = dp.allReduceSum(packed);
  const out = new Uint8Array(n);
  for (let i = 0; i < n; i++)
    out[i] = Math.floor((summed[Math.floor(i / 3)] as number) / 256 ** (i % 3)) % 256;
  return out;
}

function rebuildError(e: { name: string; code?: string; message: string }): Error {
  if (e.name === 'RolloutError' && e.code)
    return new RolloutError(e.code as RolloutErrorCode, e.message);
  if (e.name === 'TrainersError' && e.code)
    return new TrainersError(e.code as TrainersErrorCode, e.message);
  return Object.assign(new Error(e.message), { name: e.name });
}
