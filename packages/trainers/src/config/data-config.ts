import { z } from 'zod';
import { option } from './option.js';

/** Which columns a trainer reads: SFT reads responses, RM/DPO read chosen/rejected pairs. */
export type DataKind = 'sft' | 'pair';

function splitSection(kind: DataKind, test: boolean) {
  const inherit = (key: string, value: unknown) => (test ? `\${data.train.${key}}` : value);
  const keys =
    kind === 'sft'
      ? {
          prompt_key: option(z.string().min(1), inherit('prompt_key', 'prompt'), 'column holding the prompt text'),
          response_key: option(z.string().min(1), inherit('response_key', 'response'), 'column holding the response text'),
          messages_key: option(z.string().min(1), inherit('messages_key', 'messages'), 'column holding a chat message list'),
        }
      : {
          prompt_key: option(z.string().min(1), inherit('prompt_key', 'prompt'), 'column holding the prompt text'),
          messages_key: option(z.string().min(1), inherit('messages_key', 'messages'), 'column holding the prompt as chat messages'),
          chosen_key: option(z.string().min(1), inherit('chosen_key', 'chosen'), 'column holding the preferred reply'),
          rejected_key: option(z.string().min(1), inherit('rejected_key', 'rejected'), 'column holding the dispreferred reply'),
        };
  return z.strictObject({
    path: option(
      test ? z.string().min(1).nullable() : z.string().min(1),
      null,
      test ? 'test file (.json/.jsonl/.csv/.parquet/.arrow); null: split test_ratio off train' : 'training file (.json/.jsonl/.csv/.parquet/.arrow), `split@path` picks a split',
    ),
    ...keys,
    apply_chat_template: option(z.boolean(), inherit('apply_chat_template', true), 'render prompts with the tokenizer chat template'),
    max_length: option(z.number().int().positive().nullable(), inherit('max_length', null), 'truncate each sequence to this many tokens (null: no truncation)'),
    batch_size: option(z.number().int().positive(), inherit('batch_size', 128), kind === 'sft' ? 'sequences per optimizer step' : 'pairs per optimizer step'),
  });
}

/** `data.*`: training and test splits and the train/test split ratio. */
export function dataSection(kind: DataKind) {
  return z.strictObject({
    train: splitSection(kind, false),
    test: splitSection(kind, true),
    test_ratio: option(z.number().min(0).lt(1), 0.03, 'fraction of train held out when data.test.path is null (fixed seed)'),
    shuffle: option(z.boolean(), true, 'shuffle the training order every epoch (seeded, resumable)'),
  });
}
