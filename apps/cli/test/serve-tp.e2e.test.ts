import { cpSync, writeFileSync } from 'node:fs';
import { existsSync, readFileSync, readdirSync } from 'node:fs';
import { join } from 'node:path';
import { tempDir } from '@rl2/vitest-config/temp-dir';
import { afterEach, describe, expect, it } from 'vitest';
// the local fake hub of @rl2/data's hub tests
import { startFakeHub } from '../../../packages/data/test/hub-server.js';
import { initTinyModel, tmp } from './helpers.js';
import {
  type Answer,
  expectSame as expectSameAnswers,
  generateAll,
  post,
  startServe as startServeProcess,
  stopServe,
  tinyModels,
  writeTinyAdapter,
} from './serve-tp-helpers.js';

// `rl2 serve --tp 2` as a user runs it: one command, two ranks each holding half the weights,
// against `rl2 serve` on one process. RL2_COLLECTIVE_TIMEOUT_MS is short so that an idle pause
// longer than it shows the heartbeat keeps the follower alive.
const TIMEOUT_MS = 6000;
// logits differ from the one-process ones by float32 summation order (row-parallel all-reduce)
const TOL = 1e-5;

const startServe = (
  model: string,
  tp: number,
  env: Record<string, string> = {},
  args: string[] = [],
) => startServeProcess(model, tp, { RL2_COLLECTIVE_TIMEOUT_MS: String(TIMEOUT_MS), ...env }, args);
const expectSame = (tp: Answer[], one: Answer[]) => expectSameAnswers(tp, one, TOL);

/** The pid of the rank with RANK=`rank` among the children of `parent` (Linux /proc). */
function rankPid(parent: number, rank: number): number {
  for (const entry of readdirSync('/proc').filter((e) => /^\d+$/.test(e))) {
    try {
      const stat = readFileSync(`/proc/${entry}/stat`, 'utf8');
      const ppid = Number(stat.slice(stat.lastIndexOf(')') + 2).split(' ')[1]);
      const env = readFileSync(`/proc/${entry}/environ`, 'utf8').split('\0');
      if (ppid === parent && env.includes(`RANK=${rank}`)) return Number(entry);
    } catch {
      // gone meanwhile
    }
  }
  throw new Error(`no rank ${rank} under pid ${parent}`);
}

const rankBytes = async (url: string) =>
  (
    (await (await fetch(`${url}/server_info`)).json()) as {
      internal_states: { rank_param_bytes: number[] }[];
    }
  ).internal_states[0]?.rank_param_bytes ?? [];

/** A fake HF hub serving `dir`'s files as model repo `id` at one revision. */
async function hubOf(id: string, dir: string) {
  const files = Object.fromEntries(
    readdirSync(dir).map((f) => [f, new Uint8Array(readFileSync(join(dir, f)))]),
  );
  const hub = await startFakeHub({ [id]: { revisions: { main: { sha: SHA, files } } } });
  closers.push(() => hub.close());
  return hub;
}
const SHA = 'e'.repeat(40);

const logprobsOf = (answers: Answer[]) => answers.map((a) => a.logprobs);

const servers: ReturnType<typeof startServe>[] = [];
const closers: (() => Promise<void>)[] = [];
// a failed assertion must not leave servers (and their ranks) running
afterEach(async () => {
  for (const s of servers.splice(0)) await stopServe(s);
  for (const close of closers.splice(0)) await close();
});

describe('rl2 serve --tp 2', () => {
  it('serves from 2 processes with half the weights each: same greedy tokens and logprobs as one process (native + openai, concurrent), survives idling, reloads weights on both ranks, stops on SIGTERM; a lost rank fails it; a hub id is downloaded once, not by each rank', async () => {
    const [m0, m1] = await tinyModels('serve-tp');
    // the tp=2 server takes m0 from a hub: its command downloads it once, the ranks load the snapshot
    const hub = await hubOf('rl2/tiny-tp', m0);
    const cache = tempDir('rl2-serve-tp-hf-');
    const one = startServe(m0, 1);
    const two = startServe('rl2/tiny-tp', 2, { HF_ENDPOINT: hub.url, HF_HUB_CACHE: cache });
    const doomed = startServe(m0, 2);
    servers.push(one, two, doomed);
    const [urlOne, urlTwo] = await Promise.all([one.ready, two.ready]);
    // resolved once (the ranks asked the hub nothing: each used to resolve it itself, racing)
    expect(hub.log.requests.filter((r) => r.url.includes('/revision/'))).toHaveLength(1);
    // the weights' bytes were sent once (a download also makes one probe GET with a Range header)
    const weights = hub.log.requests.filter((r) => r.url.endsWith('/model.safetensors'));
    expect(
      weights.filter((r) => r.range === undefined),
      JSON.stringify(weights),
    ).toHaveLength(1);
    expect(two.output().stdout).toMatch(/downloaded rl2\/tiny-tp\/model\.safetensors/);
    const snapshot = join(cache, 'models--rl2--tiny-tp', 'snapshots', SHA);
    expect(existsSync(join(snapshot, 'model.safetensors'))).toBe(true);

    // idle for longer than the collective timeout: the heartbeat keeps rank 1 waiting
    await new Promise((r) => setTimeout(r, TIMEOUT_MS + 1000));
    const before = await generateAll(urlOne);
    expectSame(await generateAll(urlTwo), before);
    const [full] = await rankBytes(urlOne);
    const half = await rankBytes(urlTwo);
    expect(half).toHaveLength(2);
    for (const b of half) expect(b / (full as number)).toBeLessThan(0.52);

    // reload: rank 1 must load its shards of m1 too, or tokens differ from one process on m1
    for (const url of [urlOne, urlTwo])
      expect((await post(url, '/update_weights_from_disk', { model_path: m1 })).status).toBe(200);
    const after = await generateAll(urlOne);
    expect(after.map((a) => a.logprobs)).not.toEqual(before.map((a) => a.logprobs));
    expectSame(await generateAll(urlTwo), after);
    // a load that fails keeps the old weights on every rank
    const bad = await post(urlTwo, '/update_weights_from_disk', { model_path: join(m1, 'nope') });
    expect(bad.status).toBe(400);
    expectSame(await generateAll(urlTwo), after);
    // another architecture is refused before any rank loads it (issue 26 item 4)
    const deeper = tmp('serve-tp-deeper');
    cpSync(m1, deeper, { recursive: true });
    const config = JSON.parse(readFileSync(join(deeper, 'config.json'), 'utf8'));
    writeFileSync(join(deeper, 'config.json'), JSON.stringify({ ...config, num_hidden_layers: 2 }));
    const other = await post(urlTwo, '/update_weights_from_disk', { model_path: deeper });
    expect(other.status).toBe(400);
    expect(JSON.stringify(other.body)).toContain('num_hidden_layers 2 (served: 1)');
    expectSame(await generateAll(urlTwo), after);

    two.child.kill('SIGTERM');
    one.child.kill('SIGTERM');
    expect(await two.exited, two.output().stderr).toBe(0);
    expect(two.output().stdout).toContain('stopped');
    // one notice, from the command (the ranks' copies are not repeated)
    expect(two.output().stderr.match(/got SIGTERM; stopping/g)).toHaveLength(1);
    expect(await one.exited).toBe(0);

    // a follower killed: the one command fails, naming it
    await doomed.ready;
    process.kill(rankPid(doomed.child.pid as number, 1), 'SIGKILL');
    expect(await doomed.exited).not.toBe(0);
    expect(doomed.output().stderr).toMatch(/rank 1 failed with signal SIGKILL/);
  }, 180_000);

  // each rank holds its part of every adapter (lora_B of q/k/v/gate/up by output rows, lora_A
  // of o/down by input columns, a saved embedding by vocabulary); /load_lora_adapter and
  // /unload_lora_adapter reach both ranks
  it('with --lora: serves the base and LoRA adapters (lora_path, OpenAI model) as one process ' +
    'does, also adapters loaded and unloaded later', async () => {
    const dir = tmp('serve-tp-lora');
    const model = join(dir, 'model');
    await initTinyModel(model, 16, ['--seed', '0', '--kv-heads', '2', '--vocab-size', '100']);
    const all = ['q_proj', 'k_proj', 'v_proj', 'o_proj', 'gate_proj', 'up_proj', 'down_proj'];
    const a = writeTinyAdapter(join(dir, 'a'), model, 1, all);
    // loaded later: some modules, and its own embedding (split by vocabulary) and final norm
    const b = writeTinyAdapter(
      join(dir, 'b'),
      model,
      2,
      ['q_proj', 'v_proj', 'o_proj', 'up_proj', 'down_proj'],
      true,
    );
    const one = startServe(model, 1, {}, ['--lora', `a=${a}`]);
    const two = startServe(model, 2, {}, ['--lora', `a=${a}`]);
    servers.push(one, two);
    const urls = await Promise.all([one.ready, two.ready]);

    // the base and the adapter at once: their generators take turns on the group
    const [[base1, a1], [base2, a2]] = await Promise.all(
      urls.map((url) => Promise.all([generateAll(url), generateAll(url, 'a')])),
    );
    expect(logprobsOf(a1!)).not.toEqual(logprobsOf(base1!));
    expect(a1!.map((x) => x.tokens)).not.toEqual(base1!.map((x) => x.tokens));
    expectSame(base2!, base1!);
    expectSame(a2!, a1!);

    for (const url of urls) {
      const loaded = await post(url, '/load_lora_adapter', { lora_name: 'b', lora_path: b });
      expect(loaded.status, JSON.stringify(loaded.body)).toBe(200);
    }
    const [b1, b2] = await Promise.all(urls.map((url) => generateAll(url, 'b')));
    expect(logprobsOf(b1!)).not.toEqual(logprobsOf(base1!));
    expectSame(b2!, b1!);

    const unloaded = await post(urls[1]!, '/unload_lora_adapter', { lora_name: 'a' });
    expect(unloaded.body).toMatchObject({ success: true, loaded_adapters: { b } });
    const gone = await post(urls[1]!, '/generate', { input_ids: [1, 2], lora_path: 'a' });
    expect(gone.status).toBe(400);
    // the adapter left keeps its slot on both ranks, and its parts (its own embedding and norm
    // too) move onto reloaded base shards
    const reloaded = await post(urls[1]!, '/update_weights_from_disk', { model_path: model });
    expect(reloaded.status, JSON.stringify(reloaded.body)).toBe(200);
    expectSame((await generateAll(urls[1]!, 'b')).slice(0, 2), b1!.slice(0, 2));
  }, 120_000);
});
