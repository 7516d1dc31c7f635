import { Worker } from 'node:worker_threads';
import { RolloutError } from '../errors.js';
import { ENV_WORKER_SOURCE } from './env-worker-source.js';

const WORKER_URL = new URL(`data:text/javascript,${encodeURIComponent(ENV_WORKER_SOURCE)}`);
/** Longest wait for a ping after a call timed out (else half the time limit) before the worker counts as blocked. */
const MAX_PING_WAIT_MS = 5000;

export interface EnvWorkerPoolOptions {
  /** The env module (absolute path). */
  file: string;
  /** tsx's `tsImport` module URL for a TypeScript env; undefined for .js/.mjs. */
  tsxApi?: string;
  /** Worker threads; calls go to the least busy one. */
  workers: number;
  /** Limit on one call, ms (0: none). */
  timeoutMs: number;
  /** Named in errors (the rollout.env_path value). */
  source: string;
}

type Reply = { id: number; ok: boolean; value?: unknown; message?: string };
type Hello =
  | { type: 'ready'; step: boolean; reset: boolean }
  | { type: 'load-error'; message: string };

interface Call {
  resolve: (value: unknown) => void;
  reject: (error: Error) => void;
  timer?: ReturnType<typeof setTimeout>;
  slot: Slot;
}

interface Slot {
  worker: Worker;
  /** Settles once the worker loaded the env module. */
  ready: Promise<Hello>;
  calls: Set<number>;
  /** The id of a liveness ping that is out (after a timeout). */
  ping?: number;
  /** The module loaded: a worker lost later is replaced (one that cannot load is not). */
  loaded: boolean;
}

/**
 * Runs an env module in worker threads, so that a `step` that never returns, even one stuck in
 * a synchronous loop, can be stopped: a call past `timeoutMs` fails with ENV_TIMEOUT, and if its
 * worker does not then answer a ping it is terminated (its other calls fail with it) and a new
 * one loads the module. The main thread stays free for the engine, progress and Ctrl-C.
 */
export class EnvWorkerPool {
  private readonly slots: Slot[];
  private readonly pending = new Map<number, Call>();
  private nextId = 0;
  private closed = false;

  private constructor(private readonly options: EnvWorkerPoolOptions) {
    this.slots = Array.from({ length: options.workers }, () => this.spawn());
  }

  /** Starts the workers and waits until each loaded the module; rejects with ENV_LOAD when it cannot load. */
  static async start(
    options: EnvWorkerPoolOptions,
  ): Promise<{ pool: EnvWorkerPool; hasStep: boolean; hasReset: boolean }> {
    const pool = new EnvWorkerPool(options);
    const hellos = await Promise.all(pool.slots.map((s) => s.ready));
    const failed = hellos.find((h) => h.type === 'load-error');
    const ready = hellos[0];
    if (failed?.type === 'load-error' || ready?.type !== 'ready') {
      await pool.close();
      throw new RolloutError(
        'ENV_LOAD',
        `cannot load rollout.env_path "${options.source}": ${failed?.type === 'load-error' ? failed.message : 'no env worker started'}`,
      );
    }
    return { pool, hasStep: ready.step, hasReset: ready.reset };
  }

  /** Calls `op(...args)` on the env in the least busy worker. */
  async call(op: 'step' | 'reset', args: unknown[]): Promise<unknown> {
    if (this.closed)
      throw new RolloutError(
        'ENV_STEP',
        `${this.options.source} ${op}() called after the environment was closed`,
      );
    const slot = this.slots.reduce((a, b) => (b.calls.size < a.calls.size ? b : a));
    const id = this.nextId++;
    slot.calls.add(id);
    slot.worker.ref();
    const result = new Promise<unknown>((resolve, reject) =>
      this.pending.set(id, { resolve, reject, slot }),
    );
    const hello = await slot.ready;
    const call = this.pending.get(id);
    if (!call) return result; // the worker was replaced while loading: already rejected
    if (hello.type !== 'ready') {
      this.settle(
        id,
        new RolloutError(
          'ENV_LOAD',
          `the env worker could not load rollout.env_path "${this.options.source}" again: ${hello.message}`,
        ),
      );
      return result;
    }
    const { timeoutMs } = this.options;
    if (timeoutMs > 0) call.timer = setTimeout(() => this.timedOut(id, op), timeoutMs);
    slot.worker.postMessage({ id, op, args });
    return result;
  }

  /** Terminates every worker; calls in flight fail. */
  async close(): Promise<void> {
    if (this.closed) return;
    this.closed = true;
    for (const id of [...this.pending.keys()])
      this.settle(
        id,
        new RolloutError(
          'ENV_STEP',
          `${this.options.source}: the environment was closed during the call`,
        ),
      );
    await Promise.all(this.slots.map((s) => s.worker.terminate()));
  }

  private spawn(): Slot {
    // referenced (keeps the process alive) while loading and while calls are in flight
    const worker = new Worker(WORKER_URL, {
      workerData: { file: this.options.file, tsxApi: this.options.tsxApi },
    });
    let hello!: (h: Hello) => void;
    const slot: Slot = {
      worker,
      ready: new Promise<Hello>((r) => (hello = r)),
      calls: new Set(),
      loaded: false,
    };
    worker.on('message', (m: Hello | Reply) => {
      if (!('type' in m)) return this.reply(slot, m);
      slot.loaded = m.type === 'ready';
      if (slot.calls.size === 0) worker.unref();
      hello(m);
    });
    worker.on('error', (e) =>
      this.lost(
        slot,
        `the env worker crashed: ${e.message} (an exception outside step(), e.g. in a timer callback)`,
        'ENV_STEP',
      ),
    );
    worker.on('exit', (code) => {
      hello({
        type: 'load-error',
        message: `the env worker exited with code ${code} while loading`,
      });
      this.lost(
        slot,
        `the env worker exited with code ${code} (process.exit() in the env?)`,
        'ENV_STEP',
      );
    });
    return slot;
  }

  private reply(slot: Slot, m: Reply): void {
    if (m.id === slot.ping)
      slot.ping = undefined; // the worker is alive
    else this.settle(m.id, m.ok ? undefined : new Error(m.message), m.value);
  }

  private settle(id: number, error: Error | undefined, value?: unknown): void {
    const call = this.pending.get(id);
    if (!call) return;
    this.pending.delete(id);
    clearTimeout(call.timer);
    call.slot.calls.delete(id);
    if (call.slot.calls.size === 0) call.slot.worker.unref();
    if (error) call.reject(error);
    else call.resolve(value);
  }

  private timedOut(id: number, op: string): void {
    const call = this.pending.get(id);
    if (!call) return;
    const s = this.options.timeoutMs / 1000;
    this.settle(
      id,
      new RolloutError(
        'ENV_TIMEOUT',
        `${this.options.source} ${op}() did not finish within ${s} s ` +
          `(rollout.env_timeout_s=${s}); raise rollout.env_timeout_s or fix the env`,
      ),
    );
    this.checkAlive(call.slot);
  }

  /** After a timeout: a worker that does not answer a ping within the grace time is blocked, and replaced. */
  private checkAlive(slot: Slot): void {
    if (slot.ping !== undefined || this.closed) return;
    const id = this.nextId++;
    slot.ping = id;
    slot.worker.postMessage({ id, op: 'ping', args: [] });
    const grace = Math.min(this.options.timeoutMs / 2, MAX_PING_WAIT_MS);
    setTimeout(() => {
      if (slot.ping !== id || !this.slots.includes(slot)) return;
      const s = this.options.timeoutMs / 1000;
      this.lost(
        slot,
        `the env worker was restarted: a step() on it blocked its thread for more than ${s} s ` +
          `(rollout.env_timeout_s=${s}; a synchronous loop?)`,
        'ENV_TIMEOUT',
      );
    }, grace).unref();
  }

  /** A worker that crashed, exited or is blocked: its calls fail with `why`, and a new worker takes its place. */
  private lost(slot: Slot, why: string, code: 'ENV_STEP' | 'ENV_TIMEOUT'): void {
    const i = this.slots.indexOf(slot);
    if (i < 0 || this.closed) return;
    for (const id of [...slot.calls])
      this.settle(id, new RolloutError(code, `${this.options.source}: ${why}`));
    slot.worker.removeAllListeners();
    void slot.worker.terminate();
    if (slot.loaded) this.slots[i] = this.spawn();
  }
}
