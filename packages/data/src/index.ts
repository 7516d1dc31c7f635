// @rl2/data: datasets and tokenizers for rl2, as RL2 reads them: local files or Hugging Face hub
// repos in, rows tokenized for SFT, RM, DPO and PPO out.

// Errors: each names the file, row or key and what to do.
export { DataError } from './errors.js';
export type { DataErrorCode } from './errors.js';

// Sources: JSON, JSONL, CSV, Parquet and Arrow files, folders and hub datasets, as rows.
export type { Row, RowOrigin, LoadStats, SkippedRow, BadRowPolicy } from './sources/row.js';
export type { RowWithOrigin } from './sources/row-with-origin.js';
export { openDataset } from './sources/open-dataset.js';
export type { OpenDatasetOptions, DatasetStream } from './sources/open-dataset.js';
export { loadDataset } from './sources/load-dataset.js';
export type { LoadedDataset } from './sources/load-dataset.js';
export { readDataFile, readDataFileBatches, dataFileKind } from './sources/read-data-file.js';
export { parseDataSpec } from './sources/parse-data-spec.js';
export type { DataSpec } from './sources/parse-data-spec.js';
export { splitTrainTest } from './sources/split-train-test.js';
export type { TrainTestSplit } from './sources/split-train-test.js';

// Seeded randomness: one generator whose state checkpoints save.
export { SeededRng } from './random/seeded-rng.js';

// The Hugging Face hub: snapshots in the HF cache (HF_ENDPOINT, HF_TOKEN, HF_HOME, offline).
export { resolveHubDataset } from './hub/resolve-hub-dataset.js';
export { resolveHubOptions } from './hub/hub-options.js';
export type { HubOptions } from './hub/hub-options.js';
export { resolveHubModel } from './hub/resolve-hub-model.js';
export type { HubModelOptions } from './hub/resolve-hub-model.js';
export { HubSnapshot, repoCacheDir } from './hub/hub-snapshot.js';
export type { HubRepoType } from './hub/hub-snapshot.js';
export { downloadProgressLines } from './hub/download-progress.js';
export type { DownloadProgress } from './hub/download-progress.js';

// Formats: a row's messages / prompt / chosen / rejected keys as RL2's configs name them.
export type { DataKeys } from './formats/data-keys.js';
export type { ChatMessage } from './formats/chat-message.js';
export { toSftExample } from './formats/sft-example.js';
export type { SftExample } from './formats/sft-example.js';
export { toPairExample } from './formats/pair-example.js';
export type { PairExample } from './formats/pair-example.js';
export { toPpoExample } from './formats/ppo-example.js';
export type { PpoExample } from './formats/ppo-example.js';
export type { RowContext } from './formats/row-fields.js';

// Tokenizers: HF tokenizer.json (byte-level BPE) with its chat template; a character one for tiny models.
export type { Tokenizer, ChatTemplateOptions } from './tokenizer/tokenizer.js';
export { createTokenizer } from './tokenizer/create-tokenizer.js';
export type { TokenizerFiles } from './tokenizer/create-tokenizer.js';
export { loadTokenizer } from './tokenizer/load-tokenizer.js';
export { writeCharTokenizer } from './tokenizer/char-tokenizer.js';

// Tokenized sequences for each trainer: SFT, RM and DPO pairs, PPO prompts.
export type { TokenSequence } from './tokenize/token-sequence.js';
export { tokenizeMessages } from './tokenize/tokenize-messages.js';
export type { TokenizeMessagesOptions } from './tokenize/tokenize-messages.js';
export { tokenizeText } from './tokenize/tokenize-text.js';
export { toShiftedSequence, toRewardSequence } from './tokenize/sequence-layout.js';
export type { ShiftedSequence, RewardSequence } from './tokenize/sequence-layout.js';
export { tokenizeSft } from './tokenize/tokenize-sft.js';
export type { TokenizeSftOptions } from './tokenize/tokenize-sft.js';
export { tokenizeDpoPair, tokenizeRmPair } from './tokenize/tokenize-pair.js';
export type { TokenizePairOptions } from './tokenize/tokenize-pair.js';
export { ppoPrompt } from './tokenize/ppo-prompt.js';
export type { PpoPromptOptions } from './tokenize/ppo-prompt.js';
