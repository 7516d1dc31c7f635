import {
  type BadRowPolicy,
  type ChatMessage,
  type DataKeys,
  type PairExample,
  type RowOrigin,
  type SftExample,
  type Tokenizer,
  splitTrainTest,
  toPairExample,
  toSftExample,
  tokenizeDpoPair,
  tokenizeRmPair,
  tokenizeSft,
} from '@rl2/data';
import { TrainersError } from '../errors.js';
import { type SplitCounts, noCounts } from './data-counts.js';
import { type LengthBudget, type OverMaxLength, checkBudget, fitMaxLength } from './fit-lengths.js';
import { type LoadedRows, loadRows, pickRows } from './load-rows.js';
import { clipTexts, surelyOverTokens } from './raw-length.js';
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
  /** Default truncate (RL2). */
  readonly over_max_length?: OverMaxLength;
}

type Loaded = Pick<LoadedRows, 'rows' | 'origins'>;

const where = (o: RowOrigin | undefined, i: number) => (o ? `${o.file} row ${o.row}` : `row ${i}`);

/**
 * RL2 renders a raw-text prompt with the chat template when `apply_chat_template` is on:
 * prompt -> template([{user: prompt}], add_generation_prompt). Messages rows always use it.
 */
function templatedText<T extends SftExample | PairExample>(
  tokenizer: Tokenizer,
  example: T,
  apply: boolean,
): T {
  if (!apply || example.kind !== 'text' || !tokenizer.hasChatTemplate) return example;
  const messages: ChatMessage[] = [{ role: 'user', content: example.prompt }];
  return {
    ...example,
    prompt: tokenizer.applyChatTemplate(messages, { addGenerationPrompt: true }),
  };
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

/** The training items of one split and what tokenizing them dropped or cut. */
export interface SplitItems {
  items: TrainingItem[];
  /** Sequences with no trained token left (no assistant turn, or cut by max_length). */
  dropped: number;
  /** Rows cut to max_length. */
  truncated: number;
  /** Rows dropped for a sequence over max_length (`over_max_length: drop`). */
  droppedLong: number;
}

const shifted = (s: {
  states: number[];
  positionIds: number[];
  actions: number[];
  actionMask: number[];
}): TrainingSequence => ({
  inputIds: s.states,
  positionIds: s.positionIds,
  targets: s.actions,
  lossMask: s.actionMask,
});

/** One row as the sequences of `kind`, untruncated; SFT sequences without a trained token are left out and counted. */
function rowSequences(
  kind: ItemKind,
  tokenizer: Tokenizer,
  row: Loaded['rows'][number],
  ctx: { origin?: RowOrigin; index: number },
  cfg: SplitConfig,
  limit?: RawLimit,
): { sequences: TrainingSequence[]; dropped: number; overLimit?: true } {
  const keys = keysOf(cfg);
  /** The example to tokenize (its huge texts clipped when truncating), or undefined to drop it. */
  const prepare = <T extends SftExample | PairExample>(example: T): T | undefined => {
    const over = limit && surelyOverTokens(example, tokenizer, limit.tokens);
    if (!over) return example;
    if (limit.error) throw limit.error(over);
    return limit.clip ? clipTexts(example, tokenizer, limit.tokens) : undefined;
  };
  if (kind === 'sft') {
    const example = prepare(
      templatedText(tokenizer, toSftExample(row, keys, ctx), cfg.apply_chat_template),
    );
    if (!example) return { sequences: [], dropped: 0, overLimit: true };
    const { sequences, dropped } = tokenizeSft(tokenizer, example);
    return { sequences: sequences.map(shifted), dropped };
  }
  const example = prepare(
    templatedText(
      tokenizer,
      toPairExample(row, keys, { ...ctx, trainer: kind.toUpperCase() }),
      cfg.apply_chat_template,
    ),
  );
  if (!example) return { sequences: [], dropped: 0, overLimit: true };
  if (kind === 'dpo') {
    const { chosen, rejected } = tokenizeDpoPair(tokenizer, example);
    return { sequences: [shifted(chosen), shifted(rejected)], dropped: 0 };
  }
  const { chosen, rejected } = tokenizeRmPair(tokenizer, example);
  const sequences = [chosen, rejected].map((s) => ({
    inputIds: s.states,
    positionIds: s.positionIds,
    targets: s.states.map(() => 0),
    lossMask: s.eosMask,
  }));
  return { sequences, dropped: 0 };
}

/** A token limit a row's raw text is checked against before it is tokenized (see `surelyOverTokens`). */
interface RawLimit {
  tokens: number;
  /** The error to throw; without one the row is clipped (`clip`, for truncation) or dropped. */
  error?: (over: { chars: number; tokens: number }) => TrainersError;
  clip?: boolean;
}

/**
 * `max_length` with over_max_length=drop drops a surely-too-long row untokenized, and with
 * truncate clips its huge texts before tokenizing (see `clipTexts`); without max_length, the
 * micro-batch budget refuses it untokenized (tokenizing a 50 MB row took gigabytes: issue 26).
 */
function rawLimit(
  cfg: SplitConfig,
  at: string,
  budget: (LengthBudget & { split: string }) | undefined,
): RawLimit | undefined {
  if (cfg.max_length !== null)
    return { tokens: cfg.max_length, clip: cfg.over_max_length !== 'drop' };
  if (cfg.max_length !== null || !budget) return undefined;
  const { split, budgetKey } = budget;
  return {
    tokens: budget.budget,
    error: ({ chars, tokens }) =>
      new TrainersError(
        'BAD_DATA',
        `${at} (${split}.path): a text of ${chars} characters is at least ${tokens} tokens, ` +
          `more than ${budgetKey}=${budget.budget} holds (found before tokenizing). Raise ` +
          `${budgetKey}, or set ${split}.max_length=${budget.budget} with ` +
          `${split}.over_max_length=drop to drop such rows.`,
      ),
  };
}

/**
 * Tokenizes rows into training items in the layout of `kind`; errors name the file and row.
 * `max_length` cuts each sequence (RL2), or drops the row with `over_max_length: drop`; both
 * are counted. SFT sequences left without a trained token are dropped and counted.
 */
export function toItems(
  kind: ItemKind,
  tokenizer: Tokenizer,
  data: Loaded,
  cfg: SplitConfig,
  budget?: LengthBudget & { split: string },
): SplitItems {
  const out: SplitItems = { items: [], dropped: 0, truncated: 0, droppedLong: 0 };
  data.rows.forEach((row, i) => {
    const origin = data.origins[i];
    const at = where(origin, i);
    const limit = rawLimit(cfg, at, budget);
    const { sequences, dropped, overLimit } = rowSequences(
      kind,
      tokenizer,
      row,
      { origin, index: i },
      cfg,
      limit,
    );
    if (overLimit) {
      out.droppedLong += 1;
      return;
    }
    out.dropped += dropped;
    if (sequences.length === 0) return;
    const fit = fitMaxLength(
      { origin: at, sequences },
      cfg.max_length,
      cfg.over_max_length ?? 'truncate',
      kind === 'rm',
    );
    if (!fit.item) {
      out.droppedLong += 1;
      return;
    }
    if (fit.truncated) out.truncated += 1;
    let kept = fit.item.sequences;
    if (kind === 'sft') {
      kept = kept.filter((s) => s.lossMask.includes(1));
      out.dropped += fit.item.sequences.length - kept.length;
      if (kept.length === 0) return;
    } else if (kind === 'dpo' && kept.some((s) => !s.lossMask.includes(1))) {
      throw new TrainersError(
        'BAD_DATA',
        `${at}: after truncation to data.*.max_length=${cfg.max_length} the chosen or rejected ` +
          `reply has no tokens left; raise max_length or shorten the prompt`,
      );
    }
    out.items.push({ origin: at, sequences: kept });
  });
  return out;
}

/**
 * Loads `data.train` and `data.test` (or splits `test_ratio` of train off with `seed`), and
 * tokenizes both. Row-format errors name the file, the row and the expected keys. With `fit`
 * every row is checked against the micro-batch budget here, before the first step.
 */
export async function loadItems(
  kind: ItemKind,
  tokenizer: Tokenizer,
  data: { train: SplitConfig; test: SplitConfig; test_ratio: number; on_bad_row?: BadRowPolicy },
  seed: number,
  fit?: LengthBudget,
): Promise<{
  train: TrainingItem[];
  test: TrainingItem[];
  dropped: number;
  counts: { train: SplitCounts; test: SplitCounts };
}> {
  const train = await loadRows(data.train.path as string, 'data.train.path', data.on_bad_row);
  let test: LoadedRows;
  let trainPart: LoadedRows = train;
  if (data.test.path) {
    test = await loadRows(data.test.path, 'data.test.path', data.on_bad_row);
  } else {
    const split = splitTrainTest(train.rows.length, data.test_ratio, seed);
    trainPart = pickRows(train, split.train, train.skipped);
    test = pickRows(train, split.test);
  }
  const tokenize = (rows: LoadedRows, cfg: SplitConfig, key: string) => {
    let split: SplitItems;
    try {
      split = toItems(kind, tokenizer, rows, cfg, fit && { ...fit, split: key });
    } catch (err) {
      if (err instanceof TrainersError) throw err;
      throw new TrainersError('BAD_DATA', (err as Error).message);
    }
    if (fit) checkBudget(split.items, fit, kind !== 'sft', key);
    const counts: SplitCounts = {
      ...noCounts(),
      malformedRows: rows.skipped,
      truncatedRows: split.truncated,
      longRowsDropped: split.droppedLong,
      emptySequences: split.dropped,
    };
    return { ...split, counts };
  };
  const a = tokenize(trainPart, data.train, 'data.train');
  const b = tokenize(test, data.test, 'data.test');
  if (a.items.length === 0) {
    throw new TrainersError(
      'BAD_DATA',
      `data.train.path=${data.train.path}: no trainable rows (every sequence was empty after tokenization and truncation)`,
    );
  }
  return {
    train: a.items,
    test: b.items,
    dropped: a.dropped + b.dropped,
    counts: { train: a.counts, test: b.counts },
  };
}
