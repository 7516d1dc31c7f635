import { Template } from '@huggingface/jinja';
import { Tokenizer as HfTokenizer } from '@huggingface/tokenizers';
import { DataError } from '../errors.js';
import type { ChatMessage } from '../formats/chat-message.js';
import { createByteLevelBpe } from './byte-level-bpe.js';
import { specialTokenText } from './special-token.js';
import type { ChatTemplateOptions, Tokenizer } from './tokenizer.js';

/** The parsed files of a Hugging Face tokenizer folder. */
export interface TokenizerFiles {
  /** tokenizer.json */
  tokenizerJson: Record<string, unknown>;
  /** tokenizer_config.json (special tokens, chat_template). */
  tokenizerConfig: Record<string, unknown>;
  /** chat_template.jinja, which takes precedence over tokenizer_config.chat_template. */
  chatTemplate?: string;
  /** Name for error messages (folder or repo id). */
  source?: string;
}

/** Builds a {@link Tokenizer} from parsed files (no I/O). */
export function createTokenizer(files: TokenizerFiles): Tokenizer {
  const source = files.source ?? 'tokenizer';
  const config = files.tokenizerConfig;
  const hf = new HfTokenizer(files.tokenizerJson, config);
  // Fast path for byte-level BPE (see byte-level-bpe.ts); anything else goes through @huggingface/tokenizers.
  const fast = createByteLevelBpe(files.tokenizerJson);
  const idOf = (key: string): number | undefined => {
    const text = specialTokenText(config[key]);
    return text === undefined ? undefined : hf.token_to_id(text);
  };
  const eosToken = specialTokenText(config.eos_token);
  const eosTokenId = idOf('eos_token');
  if (eosToken === undefined || eosTokenId === undefined) {
    throw new DataError(
      'TOKENIZER',
      `${source}: tokenizer_config.json has no eos_token found in the vocabulary ` +
        `(got ${JSON.stringify(config.eos_token)}). Set eos_token to a token of tokenizer.json.`,
    );
  }
  const templateText = files.chatTemplate ?? pickTemplate(config.chat_template);
  const templateFile =
    files.chatTemplate !== undefined
      ? 'chat_template.jinja'
      : 'tokenizer_config.json chat_template';
  let compiled: Template | undefined;
  const specials = {
    bos_token: specialTokenText(config.bos_token) ?? '',
    eos_token: eosToken,
    pad_token: specialTokenText(config.pad_token) ?? eosToken,
    unk_token: specialTokenText(config.unk_token) ?? '',
  };
  let vocabSize: number | undefined;
  let longestToken: number | undefined;
  return {
    encode: (text, options) =>
      fast && !options?.addSpecialTokens
        ? fast(text)
        : hf.encode(text, { add_special_tokens: options?.addSpecialTokens ?? false }).ids,
    decode: (ids, options) =>
      hf.decode(Array.from(ids), { skip_special_tokens: options?.skipSpecialTokens ?? false }),
    eosTokenId,
    eosToken,
    padTokenId: idOf('pad_token') ?? eosTokenId,
    bosTokenId: idOf('bos_token'),
    get vocabSize() {
      vocabSize ??= hf.get_vocab(true).size;
      return vocabSize;
    },
    get longestToken() {
      if (longestToken === undefined) {
        longestToken = 1;
        for (const token of hf.get_vocab(true).keys())
          longestToken = Math.max(longestToken, token.length);
      }
      return longestToken;
    },
    hasChatTemplate: templateText !== undefined,
    tokenToId: (token) => hf.token_to_id(token),
    applyChatTemplate(messages: ChatMessage[], options: ChatTemplateOptions = {}): string {
      if (templateText === undefined) {
        throw new DataError(
          'TOKENIZER',
          `${source} has no chat template (no chat_template in tokenizer_config.json, no ` +
            `chat_template.jinja). Use {prompt, response} rows, or add a chat template to the tokenizer folder.`,
        );
      }
      compiled ??= compile(templateText, source);
      let text: string;
      try {
        text = compiled.render({
          ...specials,
          ...options.templateKwargs,
          messages,
          add_generation_prompt: options.addGenerationPrompt ?? false,
          ...(options.tools ? { tools: options.tools } : {}),
        });
      } catch (e) {
        if (e instanceof DataError) throw e;
        throw new DataError(
          'TOKENIZER',
          `${source}: the chat template failed on these messages (${(e as Error).message}).`,
          { cause: e },
        );
      }
      // a prefix (a lone system turn) may render to nothing; a prompt to generate from or an assistant turn may not
      const mustWrite = options.addGenerationPrompt || messages.at(-1)?.role === 'assistant';
      if (mustWrite && text.trim() === '') throw emptyRender(source, templateFile, messages, text);
      return text;
    },
  };
}

/** A template that renders messages to nothing (e.g. it knows none of their roles): named, instead of an empty prompt downstream. */
function emptyRender(
  source: string,
  templateFile: string,
  messages: readonly ChatMessage[],
  text: string,
): DataError {
  const roles = [...new Set(messages.map((m) => m.role))].join(', ') || 'none';
  return new DataError(
    'TOKENIZER',
    `${source}: the chat template (${templateFile}) rendered ${messages.length} message(s) ` +
      `(roles: ${roles}) to ${text === '' ? 'an empty string' : 'only whitespace'}; ` +
      'fix the template so that it writes these roles, or send messages it knows.',
  );
}

/** tokenizer_config.chat_template is a string, or a list of {name, template} (use "default"). */
function pickTemplate(value: unknown): string | undefined {
  if (typeof value === 'string') return value;
  if (Array.isArray(value)) {
    const named = value as { name?: string; template?: string }[];
    return (named.find((t) => t.name === 'default') ?? named[0])?.template;
  }
  return undefined;
}

function compile(text: string, source: string): Template {
  try {
    return new Template(text);
  } catch (e) {
    throw new DataError(
      'TOKENIZER',
      `${source}: the chat template does not parse (${(e as Error).message}).`,
      { cause: e },
    );
  }
}
