import { type Row, type RowOrigin, type Tokenizer, loadDataset, ppoPrompt, splitTrainTest, toPpoExample } from '@rl2/data';
import type { RolloutPrompt } from '@rl2/rollout';
import { TrainersError } from '../errors.js';
import type { PpoConfig } from './ppo-config.js';

type Split = PpoConfig['data']['train'];
type Loaded = { rows: Row[]; origins: RowOrigin[] };

async function load(path: string, key: string): Promise<Loaded> {
  try {
    return await loadDataset(path);
  } catch (err) {
    throw new TrainersError('BAD_DATA', `${key}=${path}: ${(err as Error).message}`);
  }
}

function toPrompts(tokenizer: Tokenizer, data: Loaded, cfg: Split, key: string): RolloutPrompt[] {
  const keys = { promptKey: cfg.prompt_key, messagesKey: cfg.messages_key, answerKey: cfg.answer_key };
  return data.rows.map((row, i) => {
    try {
      const example = toPpoExample(row, keys, { origin: data.origins[i], index: i });
      const { text } = ppoPrompt(tokenizer, example, { applyChatTemplate: cfg.apply_chat_template && tokenizer.hasChatTemplate });
      return { prompt: text, answer: example.answer, row: example.row };
    } catch (err) {
      throw new TrainersError('BAD_DATA', `${key}=${cfg.path}: ${(err as Error).message}`);
    }
  });
}

/**
 * The prompts of `rl2 ppo`: `{prompt, answer}` or `{messages, answer}` rows rendered to the
 * first state of a rollout (chat template with the generation prompt). Without
 * data.test.path, test_ratio of train is held out with the run's seed.
 */
export async function loadPpoPrompts(
  tokenizer: Tokenizer,
  data: PpoConfig['data'],
  seed: number,
): Promise<{ train: RolloutPrompt[]; test: RolloutPrompt[] }> {
  const trainPath = data.train.path;
  if (!trainPath) throw new TrainersError('BAD_DATA', 'data.train.path is required: a .json/.jsonl/.csv/.parquet/.arrow file of {prompt, answer} or {messages, answer} rows');
  const train = await load(trainPath, 'data.train.path');
  let trainPart = train;
  let test: Loaded;
  if (data.test.path) test = await load(data.test.path, 'data.test.path');
  else {
    const split = splitTrainTest(train.rows.length, data.test_ratio, seed);
    const pick = (idx: number[]) => ({ rows: idx.map((i) => train.rows[i]), origins: idx.map((i) => train.origins[i]) });
    trainPart = pick(split.train);
    test = pick(split.test);
  }
  const out = { train: toPrompts(tokenizer, trainPart, data.train, 'data.train.path'), test: toPrompts(tokenizer, test, data.test, 'data.test.path') };
  if (out.train.length === 0) throw new TrainersError('BAD_DATA', `data.train.path=${data.train.path}: no prompts`);
  return out;
}
