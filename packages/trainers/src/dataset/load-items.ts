import {
  type ChatMessage,
  type DataKeys,
  type PairExample,
  type Row,
  type RowOrigin,
  type SftExample,
  type Tokenizer,
  loadDataset,
  splitTrainTest,
  toPairExample,
  toSftExample,
  tokenizeDpoPair,
  tokenizeRmPair,
  tokenizeSft,
} from '@rl2/data';
import { TrainersError } from '../errors.js';
import type { TrainingItem, TrainingSequence } from './training-item.js';

/** Which trainer reads the rows: decides the row format and the sequence layout. */
export type ItemKind = 'sft' | 'rm' | 'dpo';

/** The `data.train` / `data.test` keys the loader needs. */
export interface SplitConfig {
  readonly path: string | null;
  readonly prompt_key: string;
  readonly messages_key: string;
  readonly response_key?: string;
  readonly chosen_key?: string;
  readonly rejected_key?: string;
  readonly apply_chat_template: boolean;
  readonly max_length: number | null;
}

type Loaded = { rows: Row[]; origins: RowOrigin[] };

const where = (o: RowOrigin | undefined, i: number) => (o ? `${o.file} row ${o.row}` : `row ${i}`);

/**
 * RL2 renders a raw-text prompt with the chat template when `apply_chat_template` is on:
 * prompt -> template([{user: prompt}], add_generation_prompt). Messages rows always use it.
 */
function templatedText<T extends SftExample | PairExample>(tokenizer: Tokenizer, example: T, apply: boolean): T {
  if (!apply || example.kind !== 'text' || !tokenizer.hasChatTemplate) return example;
  const messages: ChatMessage[] = [{ role: 'user', content: example.prompt }];
  return { ...example, prompt: tokenizer.applyChatTemplate(messages, { addGenerationPrompt: true }) };
}

function keysOf(cfg: SplitConfig): Partial<DataKeys> {
  return {
    promptKey: cfg.prompt_key,
    messagesKey: cfg.messages_key,
    ...(cfg.response_key ? { responseKey: cfg.response_key } : {}),
    ...(cfg.chosen_key ? { chosenKey: cfg.chosen_key } : {}),
    ...(cfg.rejected_key ? { rejectedKey: cfg.rejected_key } : {}),
  };
}

/** Tokenizes rows into training items in the layout of `kind`; errors name the file and row. */
export function toItems(kind: ItemKind, tokenizer: Tokenizer, data: Loaded, cfg: SplitConfig): { items: TrainingItem[]; dropped: number } {
  const items: TrainingItem[] = [];
  let dropped = 0;
  const maxLength = cfg.max_length ?? undefined;
  const keys = keysOf(cfg);
  data.rows.forEach((row, i) => {
    const origin = data.origins[i];
    const ctx = { origin, index: i };
    const at = where(origin, i);
    if (kind === 'sft') {
      const example = templatedText(tokenizer, toSftExample(row, keys, ctx), cfg.apply_chat_template);
      const { sequences, dropped: d } = tokenizeSft(tokenizer, example, { maxLength });
      dropped += d;
      if (sequences.length === 0) return;
      items.push({ origin: at, sequences: sequences.map((s) => ({ inputIds: s.states, positionIds: s.positionIds, targets: s.actions, lossMask: s.actionMask })) });
      return;
    }
    const example = templatedText(tokenizer, toPairExample(row, keys, { ...ctx, trainer: kind.toUpperCase() }), cfg.apply_chat_template);
    let pair: TrainingSequence[];
    if (kind === 'dpo') {
      const { chosen, rejected } = tokenizeDpoPair(tokenizer, example, { maxLength });
      pair = [chosen, rejected].map((s) => ({ inputIds: s.states, positionIds: s.positionIds, targets: s.actions, lossMask: s.actionMask }));
      if (pair.some((s) => !s.lossMask.includes(1))) {
        throw new TrainersError(
          'BAD_DATA',
          `${at}: after truncation to data.*.max_length=${cfg.max_length} the chosen or rejected reply has no tokens left; raise max_length or shorten the prompt`,
        );
      }
    } else {
      const { chosen, rejected } = tokenizeRmPair(tokenizer, example, { maxLength });
      pair = [chosen, rejected].map((s) => ({ inputIds: s.states, positionIds: s.positionIds, targets: s.states.map(() => 0), lossMask: s.eosMask }));
    }
    items.push({ origin: at, sequences: pair });
  });
  return { items, dropped };
}

async function load(path: string, what: string): Promise<Loaded> {
  try {
    return await loadDataset(path);
  } catch (err) {
    const e = err as Error;
    throw new TrainersError('BAD_DATA', `${what}=${path}: ${e.message}`);
  }
}

/**
 * Loads `data.train` and `data.test` (or splits `test_ratio` of train off with `seed`), and
 * tokenizes both. Row-format errors name the file, the row and the expected keys.
 */
export async function loadItems(
  kind: ItemKind,
  tokenizer: Tokenizer,
  data: { train: SplitConfig; test: SplitConfig; test_ratio: number },
  seed: number,
): Promise<{ train: TrainingItem[]; test: TrainingItem[]; dropped: number }> {
  const train = await load(data.train.path as string, 'data.train.path');
  let test: Loaded;
  let trainPart: Loaded = train;
  if (data.test.path) {
    test = await load(data.test.path, 'data.test.path');
  } else {
    const split = splitTrainTest(train.rows.length, data.test_ratio, seed);
    const pick = (idx: number[]) => ({ rows: idx.map((i) => train.rows[i]), origins: idx.map((i) => train.origins[i]) });
    trainPart = pick(split.train);
    test = pick(split.test);
  }
  const wrap = (fn: () => { items: TrainingItem[]; dropped: number }) => {
    try {
      return fn();
    } catch (err) {
      if (err instanceof TrainersError) throw err;
      throw new TrainersError('BAD_DATA', (err as Error).message);
    }
  };
  const a = wrap(() => toItems(kind, tokenizer, trainPart, data.train));
  const b = wrap(() => toItems(kind, tokenizer, test, data.test));
  if (a.items.length === 0) {
    throw new TrainersError('BAD_DATA', `data.train.path=${data.train.path}: no trainable rows (every sequence was empty after tokenization and truncation)`);
  }
  return { train: a.items, test: b.items, dropped: a.dropped + b.dropped };
}
