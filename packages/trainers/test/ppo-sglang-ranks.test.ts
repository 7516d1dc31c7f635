import { type IncomingMessage, createServer } from 'node:http';
import type { AddressInfo } from 'node:net';
import { join } from 'node:path';
import { createSGLangEngine, serveModel } from '@rl2/rollout';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { tinyRun } from './ppo-fixtures/tiny-run.js';
import { ppoOnRanks, readSafetensors, relTensor } from './rank-runs.js';

/** What a recording router saw: per backend, the paths it forwarded there (and update_weights_from_disk's model_path). */
interface Router {
  url: string;
  seen: { path: string; modelPath?: string }[][];
  close(): Promise<void>;
}

/**
 * A stand-in for SGLang's router in front of `backends`: /generate goes to the next backend in
 * turn, every other POST to all of them (as the router broadcasts weight updates), GET to the
 * first. With one backend it is a recording proxy.
 */
async function startRouter(backends: string[]): Promise<Router> {
  const seen: Router['seen'] = backends.map(() => []);
  let next = 0;
  const body = (req: IncomingMessage) =>
    new Promise<string>((resolve) => {
      let s = '';
      req.on('data', (c: Buffer) => {
        s += c.toString();
      });
      req.on('end', () => resolve(s));
    });
  const server = createServer(async (req, res) => {
    const path = req.url ?? '/';
    const text = req.method === 'POST' ? await body(req) : undefined;
    const targets =
      path === '/generate'
        ? [next++ % backends.length]
        : req.method === 'POST'
          ? backends.map((_, i) => i)
          : [0];
    const answers = await Promise.all(
      targets.map(async (i) => {
        const modelPath =
          path === '/update_weights_from_disk'
            ? (JSON.parse(text as string) as { model_path: string }).model_path
            : undefined;
        seen[i]?.push({ path, ...(modelPath ? { modelPath } : {}) });
        const r = await fetch(`${backends[i]}${path}`, {
          method: req.method,
          headers: { 'content-type': 'application/json' },
          body: text,
        });
        return { status: r.status, text: await r.text() };
      }),
    );
    const a =
      answers.find((x) => x.status >= 400) ?? (answers[0] as { status: number; text: string });
    res.writeHead(a.status, { 'content-type': 'application/json' }).end(a.text);
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  return {
    url: `http://127.0.0.1:${(server.address() as AddressInfo).port}`,
    seen,
    close: () => new Promise((resolve) => server.close(() => resolve())),
  };
}

// 4 query / 2 kv heads and 34 embedding rows, so actor.tp_size=2 divides them
const t = tinyRun('sglang-ranks', { heads: 4, kvHeads: 2, vocabSize: 34 });
const quietServer = { threads: 1, log: () => {} };
const greedy = { temperature: 0, max_new_tokens: 4, ignore_eos: true };
const PROMPT = [3, 4, 5];

function overrides(saveDir: string, urls: string[], extra: string[]): string[] {
  return [
    ...t.overrides(),
    'rollout.engine=sglang',
    `rollout.server_urls=${JSON.stringify(urls)}`,
    'rollout.train_prompts_per_rollout=4',
    'rollout.responses_per_prompt=4',
    'rollout.train_sampling_params.max_new_tokens=3',
    'rollout.dynamic_filtering=false',
    'actor.lr=5e-2',
    'actor.warmup_ratio=0',
    'actor.max_length_per_device=24',
    'trainer.test_freq=null',
    `trainer.save_dir=${saveDir}`,
    'trainer.progress=lines',
    'trainer.threads=1',
    'trainer.use_tensorboard=false',
    'trainer.report=false',
    ...extra,
  ];
}

describe('rl2 ppo over SGLang servers on 2 ranks (two rl2 serve processes stand in for SGLang)', () => {
  const servers: Awaited<ReturnType<typeof serveModel>>[] = [];
  beforeAll(async () => {
    for (let i = 0; i < 2; i++)
      servers.push(await serveModel({ model: t.model, port: 0, ...quietServer }));
  });
  afterAll(async () => {
    await Promise.all(servers.map((s) => s.close()));
  });

  it('actor TP(2): rank 0 splits the prompts over both servers, writes the gathered weights ' +
    'once per update and both servers reload them', async () => {
    const proxies = await Promise.all(servers.map((s) => startRouter([s.url])));
    try {
      const before = await createSGLangEngine({ urls: servers[0]?.url as string }).generate({
        inputIds: PROMPT,
        sampling: greedy,
      });
      const saveDir = join(t.dir, 'tp');
      const results = await ppoOnRanks(
        2,
        overrides(
          saveDir,
          proxies.map((p) => p.url),
          ['actor.tp_size=2', 'trainer.max_steps=2'],
        ),
      );
      expect(results.map((r) => r.rank)).toEqual([0, 1]);
      // every rank trained on the batch rank 0 got from the servers
      for (const r of results) expect(r.steps).toHaveLength(2);
      for (const k of ['actor/loss', 'train/reward/mean', 'train/response_length/mean']) {
        expect(
          results[1]?.steps.map((s) => s[k]),
          k,
        ).toEqual(results[0]?.steps.map((s) => s[k]));
      }
      for (const [i, p] of proxies.entries()) {
        const paths = p.seen[0]?.map((s) => s.path) ?? [];
        expect(
          paths.filter((x) => x === '/generate').length,
          `server ${i} got prompts`,
        ).toBeGreaterThan(0);
        const updates = p.seen[0]?.filter((s) => s.path === '/update_weights_from_disk') ?? [];
        expect(
          updates.map((u) => u.modelPath),
          `server ${i} reloaded after each update`,
        ).toEqual([join(saveDir, 'weights'), join(saveDir, 'weights')]);
      }
      // 2 steps x 4 prompts x 4 responses, split over the two servers
      expect(
        proxies.reduce(
          (n, p) => n + (p.seen[0]?.filter((s) => s.path === '/generate').length ?? 0),
          0,
        ),
      ).toBe(32);
      // the folder the servers loaded holds the actor after step 2, gathered from its TP shards
      const synced = readSafetensors(join(saveDir, 'weights', 'model.safetensors'));
      for (const [name, w] of readSafetensors(join(saveDir, 'step-2/model/model.safetensors')))
        expect(relTensor(synced.get(name), w), name).toBe(0);
      const after = await Promise.all(
        servers.map((s) =>
          createSGLangEngine({ urls: s.url }).generate({ inputIds: PROMPT, sampling: greedy }),
        ),
      );
      expect(after[0]?.logprobs).not.toEqual(before.logprobs);
      expect(after[1]?.logprobs).toEqual(after[0]?.logprobs);
    } finally {
      await Promise.all(proxies.map((p) => p.close()));
    }
  }, 90_000);

  it('a router URL: requests and weight updates reach both servers through it (FSDP actor)', async () => {
    const router = await startRouter(servers.map((s) => s.url));
    try {
      const saveDir = join(t.dir, 'router');
      const results = await ppoOnRanks(
        2,
        overrides(saveDir, [router.url], ['actor.ddp_size=1', 'trainer.max_steps=1']),
      );
      expect(results.map((r) => r.steps.length)).toEqual([1, 1]);
      for (const [i, seen] of router.seen.entries()) {
        expect(seen.filter((s) => s.path === '/generate').length, `server ${i} got prompts`).toBe(
          8,
        );
        expect(
          seen.filter((s) => s.path === '/update_weights_from_disk').map((s) => s.modelPath),
          `server ${i} reloaded`,
        ).toEqual([join(saveDir, 'weights')]);
      }
    } finally {
      await router.close();
    }
  }, 90_000);
});
