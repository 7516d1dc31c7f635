/**
 * Machine-readable reasons an @rl2/data call can fail.
 * - INVALID_ARGUMENT: a bad option value (named in the message).
 * - FILE_NOT_FOUND: a path that does not exist.
 * - UNREADABLE_FILE: a file that exists but cannot be read or decoded (permissions, corrupt Parquet/Arrow).
 * - UNSUPPORTED_FORMAT: a file extension no reader handles.
 * - MALFORMED_ROW: a JSON/JSONL/CSV row that does not parse (file and line named).
 * - INVALID_UTF8: text that is not UTF-8 (file and line, or row and column of a Parquet/Arrow file, named).
 * - MISSING_KEY: a row lacks a key the trainer's format needs (key, row and expected format named).
 * - WRONG_TYPE: a key holds the wrong type (e.g. messages is a string).
 * - EMPTY_DATASET: a source or split with no rows.
 * - HUB_UNREACHABLE: the Hugging Face hub cannot be reached and nothing is cached.
 * - HUB_NOT_FOUND: the hub answered but the dataset, split or file does not exist.
 * - TOKENIZER: a tokenizer folder lacks tokenizer.json, or a chat template is missing or fails.
 */
export type DataErrorCode =
  | 'INVALID_ARGUMENT'
  | 'FILE_NOT_FOUND'
  | 'UNREADABLE_FILE'
  | 'UNSUPPORTED_FORMAT'
  | 'MALFORMED_ROW'
  | 'INVALID_UTF8'
  | 'MISSING_KEY'
  | 'WRONG_TYPE'
  | 'EMPTY_DATASET'
  | 'HUB_UNREACHABLE'
  | 'HUB_NOT_FOUND'
  | 'TOKENIZER';

/** Base error of @rl2/data: every message names the offending value and how to fix it. */
export class DataError extends Error {
  override readonly name = 'DataError';
  /** True for a row that `onBadRow: 'skip'` would have skipped (openDataset then says how to skip). */
  readonly skippable: boolean;
  constructor(
    readonly code: DataErrorCode,
    message: string,
    options?: { cause?: unknown; skippable?: boolean },
  ) {
    super(message, options);
    this.skippable = options?.skippable ?? false;
  }
}
