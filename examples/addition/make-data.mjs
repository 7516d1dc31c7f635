#!/usr/bin/env node
// Generates the addition example: a character-level tokenizer with a ChatML chat template,
// and chat-format data for SFT ({messages}) and RM/DPO ({messages, chosen, rejected}).
// Deterministic (fixed seed): `node examples/addition/make-data.mjs` rewrites the same files.
import { mkdirSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
// @rl2/data as built (`pnpm build`): the examples are no package of their own
import { writeCharTokenizer } from '../../packages/data/dist/index.js';

const here = import.meta.dirname;

// --- tokenizer: specials, then every printable ASCII character and newline, one id each.
const chars = ['\n', ...Array.from({ length: 95 }, (_, i) => String.fromCharCode(32 + i))];
const chatTemplate =
  "{% for message in messages %}{{ '<|im_start|>' + message['role'] + '\\n' + message['content'] + '<|im_end|>' + '\\n' }}{% endfor %}{% if add_generation_prompt %}{{ '<|im_start|>assistant\\n' }}{% endif %}";
const vocabSize = writeCharTokenizer(join(here, 'tokenizer'), chars, {
  bos_token: null,
  model_max_length: 256,
  chat_template: chatTemplate,
  clean_up_tokenization_spaces: false,
});

// --- data: a + b with 1-3 digit operands.
let state = 20240601;
const rand = () => {
  state = (Math.imul(state, 1664525) + 1013904223) >>> 0;
  return state / 2 ** 32;
};
const int = (lo, hi) => lo + Math.floor(rand() * (hi - lo + 1));
const operand = () => int(0, 10 ** int(1, 3) - 1);

/**
 * A dispreferred reply: half the time the first operand echoed (wrong), otherwise the right
 * sum hedged with a question mark. Both are cues a 2-layer model can pick up in minutes;
 * telling a right sum from a near miss would need a model that has learned to add.
 */
function rejected(a, b) {
  return int(0, 1) === 0 && a !== a + b ? String(a) : `${a + b}?`;
}

function rows(n, kind) {
  return Array.from({ length: n }, () => {
    const a = operand();
    const b = operand();
    const messages = [{ role: 'user', content: `${a}+${b}=` }];
    if (kind === 'sft')
      return { messages: [...messages, { role: 'assistant', content: String(a + b) }] };
    return { messages, chosen: String(a + b), rejected: rejected(a, b) };
  });
}

const jsonl = (list) => `${list.map((r) => JSON.stringify(r)).join('\n')}\n`;
mkdirSync(join(here, 'data'), { recursive: true });
writeFileSync(join(here, 'data', 'sft-train.jsonl'), jsonl(rows(512, 'sft')));
writeFileSync(join(here, 'data', 'sft-test.jsonl'), jsonl(rows(64, 'sft')));
writeFileSync(join(here, 'data', 'pairs-train.jsonl'), jsonl(rows(512, 'pair')));
writeFileSync(join(here, 'data', 'pairs-test.jsonl'), jsonl(rows(64, 'pair')));
console.log(`wrote tokenizer (${vocabSize} ids) and data to ${here}`);
