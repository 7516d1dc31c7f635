import type { ChatMessage } from '../formats/chat-message.js';

/** Options of {@link Tokenizer.applyChatTemplate}, as in transformers' apply_chat_template. */
export interface ChatTemplateOptions {
  /** Append the assistant header so the model answers next. */
  addGenerationPrompt?: boolean;
  /** Tool (function) schemas the template lists for the model. */
  tools?: unknown[];
  /** Extra template variables, e.g. `{ enable_thinking: false }` for Qwen3. */
  templateKwargs?: Record<string, unknown>;
}

/**
 * The small tokenizer surface rollout and trainers use: text <-> ids, the special ids, and
 * chat templates. Implemented by {@link createTokenizer} over @huggingface/tokenizers + @huggingface/jinja.
 */
export interface Tokenizer {
  /** Token ids of `text`; special-token strings in the text map to their ids. No BOS/EOS unless `addSpecialTokens`. */
  encode(text: string, options?: { addSpecialTokens?: boolean }): number[];
  /** Text of `ids`; special tokens dropped when `skipSpecialTokens`. */
  decode(ids: ArrayLike<number>, options?: { skipSpecialTokens?: boolean }): string;
  /** Id of the end-of-sequence token (tokenizer_config eos_token). */
  readonly eosTokenId: number;
  readonly eosToken: string;
  /** Id used to pad (tokenizer_config pad_token, else EOS). */
  readonly padTokenId: number;
  /** Id of the BOS token, if the tokenizer has one. */
  readonly bosTokenId: number | undefined;
  /** Number of ids, added tokens included. */
  readonly vocabSize: number;
  /**
   * Length (UTF-16 units) of the longest vocabulary entry, added tokens included: no token
   * covers more text than this, so a text of `n` units has at least `n / longestToken` tokens
   * (a row far too long is known before it is tokenized).
   */
  readonly longestToken: number;
  /** True when a chat template was found (tokenizer_config.json or chat_template.jinja). */
  readonly hasChatTemplate: boolean;
  /** Renders `messages` with the chat template (the text, not ids: tokenize with `encode`). */
  applyChatTemplate(messages: ChatMessage[], options?: ChatTemplateOptions): string;
  /** Id of a token string, undefined when not in the vocabulary. */
  tokenToId(token: string): number | undefined;
}
