#!/usr/bin/env node
// Generates the Countdown example's data from a fixed seed (`node examples/countdown/make-data.mjs`
// rewrites the same files): problems {numbers, target} as in RL2's and TinyZero's Countdown
// datasets, sized for a tiny character-level model: 3 numbers from 1 to 20 and a target that
// one equation using each number once reaches (so every problem has a solution).
// - data/sft-train.jsonl: {messages: [user, assistant]} with a solution in <answer> tags, to
//   teach the format before RL;
// - data/train.jsonl, data/test.jsonl: {messages: [user], answer: {numbers, target}} for `rl2 ppo`
//   (the env, packages/rollout/src/envs/countdown-env.ts, reads the answer column).
import { mkdirSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';

const here = import.meta.dirname;
let state = 20251202;
const rand = () => {
  state = (Math.imul(state, 1664525) + 1013904223) >>> 0;
  return state / 2 ** 32;
};
const int = (lo, hi) => lo + Math.floor(rand() * (hi - lo + 1));
const pick = (xs) => xs[Math.floor(rand() * xs.length)];

/**
 * One solvable problem: numbers in a random order and a target that (a op b) op c reaches for
 * some order of the numbers, with positive integer results at each step and 1 <= target <= 100.
 */
export function countdownProblem() {
  for (;;) {
    const numbers = [int(1, 20), int(1, 20), int(1, 20)];
    const [a, b, c] = [...numbers].sort(() => rand() - 0.5);
    const op1 = pick(['+', '-', '*', '/']);
    const op2 = pick(['+', '-', '*', '/']);
    const first = apply(a, op1, b);
    if (first === undefined) continue;
    const target = apply(first, op2, c);
    if (target === undefined || target > 100) continue;
    const inner = `${a}${op1}${b}`;
    // Parentheses only where precedence needs them: (a+b)*c, but a*b+c.
    const low = (op) => op === '+' || op === '-';
    const solution = low(op1) && !low(op2) ? `(${inner})${op2}${c}` : `${inner}${op2}${c}`;
    if (Function(`return ${solution}`)() !== target)
      throw new Error(`bad solution ${solution} for ${target}`);
    return { numbers, target, solution };
  }
}

function apply(x, op, y) {
  const v = op === '+' ? x + y : op === '-' ? x - y : op === '*' ? x * y : x / y;
  return Number.isInteger(v) && v > 0 ? v : undefined;
}

const prompt = ({ numbers, target }) => `Use ${numbers.join(' ')} to make ${target}.`;
const jsonl = (list) => `${list.map((r) => JSON.stringify(r)).join('\n')}\n`;

if (process.argv[1] === import.meta.filename) {
  const seen = new Set();
  const unique = (n) => {
    const out = [];
    while (out.length < n) {
      const p = countdownProblem();
      const key = `${p.numbers.join(',')}:${p.target}`;
      if (seen.has(key)) continue;
      seen.add(key);
      out.push(p);
    }
    return out;
  };
  const test = unique(128);
  const train = unique(2048);
  const sft = unique(1024);
  const ppoRow = (p) => ({
    messages: [{ role: 'user', content: prompt(p) }],
    answer: { numbers: p.numbers, target: p.target },
  });
  mkdirSync(join(here, 'data'), { recursive: true });
  writeFileSync(
    join(here, 'data', 'sft-train.jsonl'),
    jsonl(
      sft.map((p) => ({
        messages: [
          { role: 'user', content: prompt(p) },
          { role: 'assistant', content: `<answer>${p.solution}</answer>` },
        ],
      })),
    ),
  );
  writeFileSync(join(here, 'data', 'train.jsonl'), jsonl(train.map(ppoRow)));
  writeFileSync(join(here, 'data', 'test.jsonl'), jsonl(test.map(ppoRow)));
  console.log(
    `wrote ${sft.length} SFT, ${train.length} train and ${test.length} test problems to ${join(here, 'data')}`,
  );
}
