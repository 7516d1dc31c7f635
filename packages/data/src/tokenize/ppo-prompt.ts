import type { PpoExample } from '../formats/ppo-example.js';
import type { ChatTemplateOptions, Tokenizer } from '../tokenizer/tokenizer.js';

/** Options of {@link ppoPrompt}. */
export interface PpoPromptOptions extends Pick<ChatTemplateOptions, 'tools' | 'templateKwargs'> {
  /** Apply the chat template to a `{prompt}` row as one user turn (default true when the tokenizer has a template). */
  applyChatTemplate?: boolean;
}

/**
 * The first state of a rollout: the prompt text and its ids. `{messages}` rows always go
 * through the chat template with the generation prompt; `{prompt}` rows do when
 * `applyChatTemplate` (as one user message), else the text is used as is.
 */
export function ppoPrompt(
  tokenizer: Tokenizer,
  example: PpoExample,
  options: PpoPromptOptions = {},
): { text: string; ids: number[] } {
  const useTemplate = options.applyChatTemplate ?? tokenizer.hasChatTemplate;
  const templ = {
    addGenerationPrompt: true,
    ...(options.tools ? { tools: options.tools } : {}),
    ...(options.templateKwargs ? { templateKwargs: options.templateKwargs } : {}),
  };
  let text: string;
  if (example.kind === 'messages') text = tokenizer.applyChatTemplate(example.messages, templ);
  else
    text = useTemplate
      ? tokenizer.applyChatTemplate([{ role: 'user', content: example.prompt }], templ)
      : example.prompt;
  return { text, ids: tokenizer.encode(text) };
}
