/** Column names each trainer reads; RL2's prompt_key, response_key, messages_key, chosen_key, rejected_key, answer_key. */
export interface DataKeys {
  promptKey: string;
  responseKey: string;
  messagesKey: string;
  chosenKey: string;
  rejectedKey: string;
  answerKey: string;
}

/** RL2's default column names. */
export const DEFAULT_DATA_KEYS: DataKeys = {
  promptKey: 'prompt',
  responseKey: 'response',
  messagesKey: 'messages',
  chosenKey: 'chosen',
  rejectedKey: 'rejected',
  answerKey: 'answer',
};

/** Defaults with `keys` laid over them. */
export function resolveDataKeys(keys: Partial<DataKeys> = {}): DataKeys {
  return { ...DEFAULT_DATA_KEYS, ...keys };
}
