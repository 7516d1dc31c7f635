// `pnpm bench memory-reuse [--mib M] [--rounds R]`: what freed memory costs the next tensor.
// A fresh node process allocates an M MiB Float32Array, writes it, frees it and collects it,
// R times: once as glibc does by default (each large block is a fresh mmap, given back on free),
// once after the addon's retainFreedMemory(0), and once with a huge-page reserve as
// initEngine({ retainMemory }) applies it (on for training). Prints each way's seconds per GiB
// and page faults: the first round faults fresh pages in (one per 4 KiB, or per 2 MiB in the
// reserve); the later ones are what a training step pays for its gradients and temporaries.
import { cpus, loadavg } from 'node:os';
import { loadNativeAddon } from '../src/native-addon.js';
import { pageReuseRounds } from '../src/testing/page-reuse.js';
import { numberOption } from './bench-option.js';

const mib = numberOption('mib', 1024);
const rounds = numberOption('rounds', 4);
const load = loadNativeAddon(process.env);
if (!load.ok) {
  console.error(`memory-reuse bench: no native addon (${load.reason})`);
  process.exit(1);
}
console.log(
  `memory-reuse: ${mib} MiB per round, ${rounds} rounds; ${cpus().length} cores (${cpus()[0]?.model}), ` +
    `load average ${loadavg()
      .map((x) => x.toFixed(2))
      .join(', ')}`,
);
const perGiB = (s: number) => (s * 1024) / mib;
const mean = (xs: number[]) => xs.reduce((a, x) => a + x, 0) / xs.length;
const WAYS = [
  ['default (fresh mmap per block)', null],
  ['retainFreedMemory(0)', 0],
  [`retainFreedMemory(${2 * mib} MiB huge-page reserve)`, 2 * mib * 2 ** 20],
] as const;
const runs = WAYS.map(([, reserve]) => pageReuseRounds(load.path, reserve, mib, rounds));
console.log(
  '\n| glibc malloc | first round, s/GiB | first round, page faults | later rounds, s/GiB | page faults per later round |',
);
console.log('| --- | --- | --- | --- | --- |');
runs.forEach((run, i) => {
  const later = run.rounds.slice(1);
  const first = run.rounds[0]!;
  console.log(
    `| ${WAYS[i]![0]} | ${perGiB(first.seconds).toFixed(3)} | ${first.faults} | ` +
      `${perGiB(mean(later.map((r) => r.seconds))).toFixed(3)} | ${mean(later.map((r) => r.faults)).toFixed(0)} |`,
  );
});
const later = (i: number) => mean(runs[i]!.rounds.slice(1).map((r) => r.seconds));
console.log(
  `\nlater rounds: retained memory is ${(later(0) / later(1)).toFixed(1)}x faster to write than ` +
    `fresh pages; first round: the huge-page reserve is ${(runs[0]!.rounds[0]!.seconds / runs[2]!.rounds[0]!.seconds).toFixed(1)}x faster`,
);
