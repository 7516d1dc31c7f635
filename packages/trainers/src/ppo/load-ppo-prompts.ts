import { type Tokenizer, ppoPrompt, splitTrainTest, toPpoExample } from '@rl2/data';
import type { RolloutPrompt } from '@rl2/rollout';
import { type SplitCounts, noCounts } from '../dataset/data-counts.js';
import type { LengthBudget } from '../dataset/fit-lengths.js';
import { type LoadedRows, loadRows, pickRows } from '../dataset/load-rows.js';
import { TrainersError } from '../errors.js';
import type { PpoConfig } from './ppo-config.js';

type Split = PpoConfig['data']['train'];

function toPrompts(
  tokenizer: Tokenizer,
  data: LoadedRows,
  cfg: Split,
  key: string,
  fit?: LengthBudget,
): RolloutPrompt[] {
  const keys = {
    promptKey: cfg.prompt_key,
    messagesKey: cfg.messages_key,
    answerKey: cfg.answer_key,
  };
  return data.rows.map((row, i) => {
    let prompt: RolloutPrompt;
    try {
      const example = toPpoExample(row, keys, { origin: data.origins[i], index: i });
      const { text } = ppoPrompt(tokenizer, example, {
        applyChatTemplate: cfg.apply_chat_template && tokenizer.hasChatTemplate,
      });
      prompt = { prompt: text, answer: example.answer, row: example.row };
    } catch (err) {
      throw new TrainersError('BAD_DATA', `${key}=${cfg.path}: ${(err as Error).message}`);
    }
    const length = fit ? tokenizer.encode(prompt.prompt).length : 0;
    if (fit && length >= fit.budget) {
      const origin = data.origins[i];
      throw new TrainersError(
        'BAD_DATA',
        `${origin ? `${origin.file} row ${origin.row}` : `row ${i + 1}`} (${key}): the prompt ` +
          `has ${length} tokens, leaving no room for a response within ${fit.budgetKey}=${fit.budget}. ` +
          `Raise ${fit.budgetKey}, or shorten or remove that prompt.`,
      );
    }
    return prompt;
  });
}

/**
 * The prompts of `rl2 ppo`: `{prompt, answer}` or `{messages, answer}` rows rendered to the
 * first state of a rollout (chat template with the generation prompt). Without
 * data.test.path, test_ratio of train is held out with the run's seed. With `fit`, every
 * prompt is checked here, before the first step, to leave room for a response in one
 * micro-batch (the rollout caps what it generates to that budget).
 */
export async function loadPpoPrompts(
  tokenizer: Tokenizer,
  data: PpoConfig['data'],
  seed: number,
  fit?: LengthBudget,
): Promise<{
  train: RolloutPrompt[];
  test: RolloutPrompt[];
  counts: { train: SplitCounts; test: SplitCounts };
}> {
  const trainPath = data.train.path;
  if (!trainPath)
    throw new TrainersError(
      'BAD_DATA',
      'data.train.path is required: a .json/.jsonl/.csv/.parquet/.arrow file of {prompt, answer} or {messages, answer} rows',
    );
  const train = await loadRows(trainPath, 'data.train.path', data.on_bad_row);
  let trainPart = train;
  let test: LoadedRows;
  if (data.test.path) test = await loadRows(data.test.path, 'data.test.path', data.on_bad_row);
  else {
    const split = splitTrainTest(train.rows.length, data.test_ratio, seed);
    trainPart = pickRows(train, split.train, train.skipped);
    test = pickRows(train, split.test);
  }
  const out = {
    train: toPrompts(tokenizer, trainPart, data.train, 'data.train.path', fit),
    test: toPrompts(tokenizer, test, data.test, 'data.test.path', fit),
    counts: {
      train: { ...noCounts(), malformedRows: trainPart.skipped },
      test: { ...noCounts(), malformedRows: test.skipped },
    },
  };
  if (out.train.length === 0)
    throw new TrainersError('BAD_DATA', `data.train.path=${data.train.path}: no prompts`);
  return out;
}
