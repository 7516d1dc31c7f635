#!/usr/bin/env node
// Generates the RL demo's data from a fixed seed (`node examples/rl-demo/make-data.mjs` rewrites
// the same files). The task: "max 3 8 1 5" -> "8", the largest of four digits.
// - data/sft-train.jsonl: {messages: [user, assistant]} where the assistant answers with a
//   digit of the prompt picked at random (right about a third of the time): the demonstrations
//   teach the answer format, not the rule, so SFT starts RL from a model that answers with a
//   prompt digit and has no idea which;
// - data/train.jsonl, data/test.jsonl: {messages: [user], answer} for `rl2 ppo`; the env
//   (max-digit-env.ts) pays 1 for the largest digit, 0 otherwise.
import { mkdirSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';

const here = import.meta.dirname;
let state = 20251203;
const rand = () => {
  state = (Math.imul(state, 1664525) + 1013904223) >>> 0;
  return state / 2 ** 32;
};
const int = (lo, hi) => lo + Math.floor(rand() * (hi - lo + 1));
/**
 * Four digits with a unique largest one, drawn uniformly from 3 to 9, the other three below
 * it and the largest at a random position: no single answer (such as "9", the largest of
 * four uniform digits a third of the time) or position pays more than about 1 in 4.
 */
const problem = () => {
  const max = int(3, 9);
  const digits = [int(0, max - 1), int(0, max - 1), int(0, max - 1)];
  digits.splice(int(0, 3), 0, max);
  return { digits, answer: String(max) };
};
const prompt = (digits) => `max ${digits.join(' ')}`;
const jsonl = (list) => `${list.map((r) => JSON.stringify(r)).join('\n')}\n`;

const sft = Array.from({ length: 512 }, () => {
  const { digits } = problem();
  const pick = digits[Math.floor(rand() * digits.length)];
  return {
    messages: [
      { role: 'user', content: prompt(digits) },
      { role: 'assistant', content: String(pick) },
    ],
  };
});
const ppoRows = (n) =>
  Array.from({ length: n }, () => {
    const { digits, answer } = problem();
    return { messages: [{ role: 'user', content: prompt(digits) }], answer };
  });
mkdirSync(join(here, 'data'), { recursive: true });
writeFileSync(join(here, 'data', 'sft-train.jsonl'), jsonl(sft));
writeFileSync(join(here, 'data', 'train.jsonl'), jsonl(ppoRows(2048)));
writeFileSync(join(here, 'data', 'test.jsonl'), jsonl(ppoRows(128)));
console.log(`wrote ${sft.length} SFT, 2048 train and 128 test rows to ${join(here, 'data')}`);
