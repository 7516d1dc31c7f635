// The README example, runnable from the repo: npx tsx packages/rollout/scripts/readme-example.ts
import {
  createEmbeddedEngine,
  createEnvironment,
  createRolloutRunner,
  createSGLangEngine,
  createToyGenerator,
  startSGLangServer,
} from '../src/index.js';

// A 32-symbol character tokenizer matching the toy generator's vocabulary.
const alphabet = '0123456789+-*/=? abcdefghijklmno';
const tokenizer = {
  encode: (text: string) => [...text].map((c) => alphabet.indexOf(c)),
  decode: (ids: readonly number[]) => ids.map((i) => alphabet[i]).join(''),
};

// Serve an in-process engine over the SGLang API, then talk to it as to any SGLang server.
const embedded = createEmbeddedEngine({ generator: createToyGenerator({ vocabSize: 32 }) });
const server = await startSGLangServer(embedded, { port: 0, decode: tokenizer.decode });
const engine = createSGLangEngine({ urls: [server.url] });

// A toy verifiable reward: 1 when the response contains the answer digit.
const env = createEnvironment({
  step: async (_state: string, action: string, answer: unknown) => [
    null,
    action.includes(String(answer)) ? 1 : 0,
    true,
  ],
});
const prompts = [
  ['1+2=', 3],
  ['3+4=', 7],
  ['2*3=', 6],
  ['9-5=', 4],
].map(([prompt, answer]) => ({ prompt: String(prompt), answer }));
const runner = createRolloutRunner({
  engine,
  env,
  tokenizer,
  nextPrompts: (n) => prompts.splice(0, n),
  promptsPerStep: 2,
  responsesPerPrompt: 8,
  sampling: { temperature: 1, max_new_tokens: 4 },
  seed: 0,
  dynamicFiltering: true, // drop groups whose 8 rewards are all equal
  refill: true, // and take more prompts until 2 groups are kept
});
const { groups, batch, metrics } = await runner.step(1);
console.log(
  groups.map((g) => `${g[0].prompt} -> ${g.map((t) => t.turns[0].action).join(' | ')}`).join('\n'),
);
const first = batch.sequences[0];
console.log(
  `${batch.sequences.length} sequences, trajectory ids ${batch.trajectoryIds.join(',')}; the first:`,
);
for (const key of ['states', 'actions', 'actionMask', 'llmLogps', 'rewards'] as const) {
  console.log(`  ${key.padEnd(10)} ${first[key].map((x) => +x.toFixed(2)).join(' ')}`);
}
const { tokens_per_s, rollout_s, ...rest } = metrics;
console.log(rest);
await server.close();
