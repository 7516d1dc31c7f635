import { z } from 'zod';
import { option } from './option.js';

/** `data.on_bad_row`: what a row that does not parse (JSON, JSONL, CSV) does to the run. */
export const onBadRow = () =>
  option(
    z.enum(['error', 'skip']),
    'error',
    'a malformed JSON/JSONL/CSV row: stop with its file and line (error), or skip it (counted: data/*/malformed_rows)',
  );

/** `data.test.*` keys default to their `data.train.*` value by interpolation. */
export type Inherit = (key: string, value: unknown) => unknown;

/** The default of a `data.train.*` key, or `${data.train.KEY}` for the same `data.test.*` key. */
export const inheritFromTrain =
  (test: boolean): Inherit =>
  (key, value) =>
    test ? `\${data.train.${key}}` : value;

/** `data.*.prompt_key`: the column of the prompt text (every trainer). */
export const promptKey = (inherit: Inherit) =>
  option(z.string().min(1), inherit('prompt_key', 'prompt'), 'column holding the prompt text');

/** `data.*.messages_key` of prompt-only rows (`rl2 rm`, `rl2 dpo`, `rl2 ppo`). */
export const promptMessagesKey = (inherit: Inherit) =>
  option(
    z.string().min(1),
    inherit('messages_key', 'messages'),
    'column holding the prompt as chat messages',
  );

/** `data.*.apply_chat_template` (every trainer). */
export const applyChatTemplate = (inherit: Inherit) =>
  option(
    z.boolean(),
    inherit('apply_chat_template', true),
    'render raw-text prompts with the tokenizer chat template',
  );

/** `data.test_ratio` (every trainer). */
export const testRatio = () =>
  option(
    z.number().min(0).lt(1),
    0.03,
    'fraction of train held out when data.test.path is null (fixed seed)',
  );

const sftKeys = (inherit: Inherit) => ({
  prompt_key: promptKey(inherit),
  response_key: option(
    z.string().min(1),
    inherit('response_key', 'response'),
    'column holding the response text',
  ),
  messages_key: option(
    z.string().min(1),
    inherit('messages_key', 'messages'),
    'column holding a chat message list',
  ),
});

const pairKeys = (inherit: Inherit) => ({
  prompt_key: promptKey(inherit),
  messages_key: promptMessagesKey(inherit),
  chosen_key: option(
    z.string().min(1),
    inherit('chosen_key', 'chosen'),
    'column holding the preferred reply',
  ),
  rejected_key: option(
    z.string().min(1),
    inherit('rejected_key', 'rejected'),
    'column holding the dispreferred reply',
  ),
});

function dataSectionOf<K extends z.ZodRawShape>(keys: (inherit: Inherit) => K, unit: string) {
  const split = <S extends z.ZodType>(pathSchema: S, test: boolean) => {
    const inherit = inheritFromTrain(test);
    return z.strictObject({
      path: option(
        pathSchema,
        null,
        test
          ? 'test file (.json/.jsonl/.csv/.parquet/.arrow); null: split test_ratio off train'
          : 'required: training file (.json/.jsonl/.csv/.parquet/.arrow) or hub dataset; `split@path` picks a split',
      ),
      ...keys(inherit),
      apply_chat_template: applyChatTemplate(inherit),
      max_length: option(
        z.number().int().positive().nullable(),
        inherit('max_length', null),
        'truncate each sequence to this many tokens (null: no truncation); the count is printed and logged (data/*/truncated_rows)',
      ),
      over_max_length: option(
        z.enum(['truncate', 'drop']),
        inherit('over_max_length', 'truncate'),
        'a row with a sequence longer than max_length: truncate it (RL2), or drop the row (counted: data/*/long_rows_dropped)',
      ),
      batch_size: option(
        z.number().int().positive(),
        inherit('batch_size', 128),
        test ? `${unit} packed together per validation chunk` : `${unit} per optimizer step`,
      ),
    });
  };
  return z.strictObject({
    train: split(z.string().min(1), false),
    test: split(z.string().min(1).nullable(), true),
    test_ratio: testRatio(),
    shuffle: option(
      z.boolean(),
      true,
      'shuffle the training order every epoch (seeded, resumable)',
    ),
    on_bad_row: onBadRow(),
  });
}

/** `data.*` of `rl2 sft`: {prompt, response} or {messages} rows. */
export const sftDataSection = () => dataSectionOf(sftKeys, 'rows');

/** `data.*` of `rl2 rm` / `rl2 dpo`: {prompt|messages, chosen, rejected} rows. */
export const pairDataSection = () => dataSectionOf(pairKeys, 'pairs');
