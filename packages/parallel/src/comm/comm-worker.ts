// Worker thread that owns this rank's sockets: the compute thread posts collective requests on
// a MessagePort and sleeps on Atomics.wait; this thread runs them on its own event loop, posts
// the result and bumps the shared counter so the compute thread wakes (see README, "sync vs async").
import { type MessagePort, workerData } from 'node:worker_threads';
import { ParallelError } from '../errors.js';
import type { LaunchEnv } from '../launch/read-launch-env.js';
import type { Collective, GroupSpec, ReduceOp } from './collective.js';
import { createSocketWorld, type SocketWorldOptions } from './socket-world.js';

/** One request from the compute thread. */
export interface CommRequest {
  id: number;
  op:
    | 'allReduce'
    | 'allGather'
    | 'reduceScatter'
    | 'broadcast'
    | 'barrier'
    | 'send'
    | 'recv'
    | 'close';
  group: GroupSpec;
  data: Float32Array;
  /** ReduceOp, or the root / peer group rank. */
  arg?: ReduceOp | number;
}

export type CommReply =
  | { id: number; ok: true; data?: Float32Array }
  | { id: number; ok: false; code: string; message: string };

const { env, options, port, ctrl } = workerData as {
  env: LaunchEnv;
  options: SocketWorldOptions;
  port: MessagePort;
  ctrl: Int32Array;
};

function reply(r: CommReply): void {
  port.postMessage(r, r.ok && r.data ? [r.data.buffer as ArrayBuffer] : []);
  Atomics.add(ctrl, 1, 1);
  Atomics.notify(ctrl, 1);
}

async function run(g: Collective, q: CommRequest): Promise<Float32Array | undefined> {
  switch (q.op) {
    case 'allReduce':
      return g.allReduce(q.data, q.arg as ReduceOp);
    case 'allGather':
      return g.allGather(q.data);
    case 'reduceScatter':
      return g.reduceScatter(q.data, q.arg as ReduceOp);
    case 'broadcast':
      return g.broadcast(q.data, q.arg as number);
    case 'barrier':
      await g.barrier();
      return undefined;
    case 'send':
      await g.send(q.data, q.arg as number);
      return undefined;
    case 'recv':
      return g.recv(q.data, q.arg as number);
    default:
      throw new ParallelError('INVALID_ARGUMENT', `unknown collective ${q.op}`);
  }
}

// A bug here must not leave the compute thread asleep until its wait limit: report and wake it.
process.on('uncaughtException', (e) => {
  port.postMessage({
    id: -1,
    ok: false,
    code: 'PEER_LOST',
    message: `the communication worker crashed: ${e.stack ?? e.message}`,
  } satisfies CommReply);
  ctrl[0] = 3;
  Atomics.add(ctrl, 1, 1);
  Atomics.notify(ctrl, 1);
});

createSocketWorld(env, options).then(
  (sw) => {
    ctrl[0] = 1; // ready
    Atomics.add(ctrl, 1, 1);
    Atomics.notify(ctrl, 1);
    port.on('message', (q: CommRequest) => {
      if (q.op === 'close') {
        sw.close();
        reply({ id: q.id, ok: true });
        return;
      }
      let g: Collective;
      try {
        g = sw.subgroup(q.group.ranks, q.group.name);
      } catch (e) {
        const err = e as ParallelError;
        reply({ id: q.id, ok: false, code: err.code ?? 'INVALID_ARGUMENT', message: err.message });
        return;
      }
      run(g, q).then(
        (data) => reply({ id: q.id, ok: true, data }),
        (e: ParallelError) =>
          reply({ id: q.id, ok: false, code: e.code ?? 'PEER_LOST', message: e.message }),
      );
    });
  },
  (e: ParallelError) => {
    port.postMessage({
      id: -1,
      ok: false,
      code: e.code ?? 'RENDEZVOUS',
      message: e.message,
    } satisfies CommReply);
    ctrl[0] = 2; // failed
    Atomics.add(ctrl, 1, 1);
    Atomics.notify(ctrl, 1);
  },
);
