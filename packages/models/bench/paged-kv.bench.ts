// `pnpm bench paged-kv [--threads N] [--layers N] [--prompt N] [--new N] [--block N]`: the paged KV
// cache against the contiguous one (`AppendKv`), same process, at the Qwen3-0.6B shape with few
// layers (random weights in memory; per-layer cost is the full model's): batch 64 as 8 GRPO groups
// of 8 responses per prompt (one prefill of all 64 rows, as the generator sends them), greedy,
// each response then forced onto its own tokens so the group's rows diverge. Steps alternate
// between the two caches (load affects both alike). Prints the KV bytes each holds after the
// prefill, after the decode and after half the rows leave (the paged pool's segments, and its held
// blocks: a segment is dropped once none of its blocks is held), the prefill's time and decode
// tokens/s (wall, CPU).
import { loadavg } from 'node:os';
import { initEngine } from '@rl2/engine';
import { QWEN3_0_6B } from '../scripts/real-size-checkpoint.js';
import { initRandomModel } from '../src/index.js';
import { type AppendKv, fusedDecoder } from '../src/generation/fused-decoder.js';
import { type PagedKv, pagedDecoder } from '../src/generation/paged-decoder.js';

const args = process.argv.slice(2);
const flag = (name: string, fallback: number) => {
  const i = args.indexOf(name);
  return i >= 0 ? Number(args[i + 1]) : fallback;
};
const THREADS = flag('--threads', 2);
const LAYERS = flag('--layers', 4);
const PROMPT = flag('--prompt', 128);
const NEW = flag('--new', 32);
const BLOCK = flag('--block', 16);
const GROUPS = 8;
const GROUP = 8;
const B = GROUPS * GROUP;

const mib = (bytes: number) => `${(bytes / 2 ** 20).toFixed(1)} MiB`;
const appendBytes = (kv: AppendKv) =>
  kv.layers.reduce((a, l) => a + l.k.byteLength + l.v.byteLength, 0);

function argmaxRows(logits: Float32Array, rows: number): number[] {
  const v = logits.length / rows;
  return Array.from({ length: rows }, (_, r) => {
    let best = 0;
    for (let j = 1; j < v; j++) if (logits[r * v + j]! > logits[r * v + best]!) best = j;
    return best;
  });
}

async function main() {
  await initEngine({ backend: 'native', threads: THREADS, logger: () => {} });
  const spec = { ...QWEN3_0_6B, numLayers: LAYERS };
  const model = initRandomModel(spec, 1);
  const vocab = spec.vocabSize;
  const prompts = Array.from({ length: GROUPS }, (_, g) =>
    Array.from({ length: PROMPT }, (_, t) => (g * 131 + t * 17 + 1) % vocab),
  );
  const tokens = Array.from({ length: B }, (_, r) => prompts[Math.floor(r / GROUP)]!);
  const positions = tokens.map((p) => p.map((_, t) => t));
  const pad = new Array<number>(B).fill(0);
  const contiguous = fusedDecoder(model)!;
  const paged = pagedDecoder(model, { blockSize: BLOCK })!;
  const kvHeld = (c: AppendKv, p: PagedKv) => ({
    contiguous: appendBytes(c),
    paged: paged.pool.bytes,
    blocks: paged.pool.heldBytes,
    tokens: p.rows.reduce((a, r) => a + r.length, 0),
  });

  const t0 = performance.now();
  let c = (await contiguous.prefill(tokens, positions, pad, NEW)).kv;
  const t1 = performance.now();
  const pf = await paged.prefill(tokens, positions, pad, NEW);
  const prefillMs = { contiguous: t1 - t0, paged: performance.now() - t1 };
  let p = pf.kv;
  // each response of a group takes its own first token, so the group's rows diverge
  let next = argmaxRows(pf.logits, B).map((t, r) => (t + (r % GROUP) * 7) % vocab);
  const afterPrefill = kvHeld(c, p);
  const wall = { contiguous: 0, paged: 0 };
  const cpu = { contiguous: 0, paged: 0 };
  let same = true;
  for (let step = 0; step < NEW; step++) {
    const pos = new Array<number>(B).fill(PROMPT + step);
    const order =
      step % 2 === 0 ? (['paged', 'contiguous'] as const) : (['contiguous', 'paged'] as const);
    const picked: Record<string, number[]> = {};
    for (const which of order) {
      const t0 = performance.now();
      const u0 = process.cpuUsage();
      if (which === 'paged') {
        const out = await paged.step(p, next, pos);
        p = out.kv;
        picked.paged = argmaxRows(out.logits, B);
      } else {
        const out = await contiguous.step(c, next, pos);
        c = out.kv;
        picked.contiguous = argmaxRows(out.logits, B);
      }
      const u = process.cpuUsage(u0);
      wall[which] += performance.now() - t0;
      cpu[which] += (u.user + u.system) / 1000;
    }
    same &&= picked.paged!.every((t, r) => t === picked.contiguous![r]);
    next = picked.paged!;
  }
  const afterDecode = kvHeld(c, p);
  const half = Array.from({ length: B / 2 }, (_, i) => 2 * i);
  c = contiguous.select(c, half)!;
  p = paged.select(p, half)!;
  const afterLeave = kvHeld(c, p);

  console.log(
    `paged KV at the Qwen3-0.6B shape, ${LAYERS} of 28 layers, ${THREADS} threads: batch ${B} = ${GROUPS} prompts of ` +
      `${PROMPT} tokens x ${GROUP} responses, ${NEW} new tokens, blocks of ${BLOCK} tokens; load ${loadavg()
        .map((l) => l.toFixed(1))
        .join(' ')}`,
  );
  console.log(
    '| KV bytes held | tokens in rows | contiguous | paged (pool) | paged (held blocks) |',
  );
  console.log('|---|---:|---:|---:|---:|');
  for (const [what, k] of [
    ['after the prefill', afterPrefill],
    ['after the decode', afterDecode],
    ['after half the rows leave', afterLeave],
  ] as const)
    console.log(
      `| ${what} | ${k.tokens} | ${mib(k.contiguous)} | ${mib(k.paged)} | ${mib(k.blocks)} |`,
    );
  const rate = (ms: number) => ((B * NEW) / (ms / 1000)).toFixed(1);
  const sec = (ms: number) => `${(ms / 1000).toFixed(2)} s`;
  console.log(
    `prefill of the ${B} rows: contiguous ${sec(prefillMs.contiguous)}, paged ${sec(prefillMs.paged)} (a row per prompt)`,
  );
  console.log(
    `decode tokens/s (wall): contiguous ${rate(wall.contiguous)}, paged ${rate(wall.paged)}`,
  );
  console.log(
    `decode tokens per CPU-s: contiguous ${rate(cpu.contiguous)}, paged ${rate(cpu.paged)}`,
  );
  console.log(
    `greedy tokens equal: ${same}; peak RSS ${(process.resourceUsage().maxRSS / 1024).toFixed(0)} MiB`,
  );
  contiguous.dispose(c);
  paged.dispose(p);
}

await main();
