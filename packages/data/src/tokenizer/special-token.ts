/** tokenizer_config.json writes special tokens as a string or as an AddedToken dict {content, ...}. */
export function specialTokenText(value: unknown): string | undefined {
  if (typeof value === 'string') return value;
  if (
    value &&
    typeof value === 'object' &&
    typeof (value as { content?: unknown }).content === 'string'
  )
    return (value as { content: string }).content;
  return undefined;
}
