#!/usr/bin/env node
// Generates the calculator-tool example: questions "a*b" (a 2-digit, b 1-digit) that the model
// answers by calling the TypeScript calculator env (packages/rollout/src/envs/calculator-env.ts).
// - data/sft-train.jsonl: {messages} transcripts of the tool protocol, to warm the model up:
//   user "a*b" -> assistant "<calc>a*b</calc>" -> user "<result>p</result>" -> assistant "<answer>p</answer>"
// - data/train.jsonl, data/test.jsonl: {messages: [user], answer} prompts for `rl2 ppo`.
// Deterministic: `node examples/calculator-tool/make-data.mjs` rewrites the same files.
import { writeFileSync } from 'node:fs';
import { join } from 'node:path';

const here = import.meta.dirname;
let state = 20251129;
const rand = () => {
  state = (Math.imul(state, 1664525) + 1013904223) >>> 0;
  return state / 2 ** 32;
};
const int = (lo, hi) => lo + Math.floor(rand() * (hi - lo + 1));
const question = () => {
  const [a, b] = [int(10, 99), int(2, 9)];
  return { q: `${a}*${b}`, answer: a * b };
};

const transcript = ({ q, answer }) => ({
  messages: [
    { role: 'user', content: q },
    { role: 'assistant', content: `<calc>${q}</calc>` },
    { role: 'user', content: `<result>${answer}</result>` },
    { role: 'assistant', content: `<answer>${answer}</answer>` },
  ],
});
const prompt = ({ q, answer }) => ({ messages: [{ role: 'user', content: q }], answer });

const jsonl = (rows) => `${rows.map((r) => JSON.stringify(r)).join('\n')}\n`;
writeFileSync(
  join(here, 'data', 'sft-train.jsonl'),
  jsonl(Array.from({ length: 512 }, () => transcript(question()))),
);
writeFileSync(
  join(here, 'data', 'train.jsonl'),
  jsonl(Array.from({ length: 512 }, () => prompt(question()))),
);
writeFileSync(
  join(here, 'data', 'test.jsonl'),
  jsonl(Array.from({ length: 64 }, () => prompt(question()))),
);
console.log(`wrote ${here}/data/{sft-train,train,test}.jsonl`);
