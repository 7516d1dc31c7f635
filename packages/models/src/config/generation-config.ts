import { ModelsError } from '../errors.js';

/** The sampling defaults of a Hugging Face `generation_config.json` this package uses. */
export interface GenerationConfig {
  bosTokenId?: number;
  eosTokenIds: number[];
  padTokenId?: number;
  temperature?: number;
  topP?: number;
  topK?: number;
  maxNewTokens?: number;
  doSample?: boolean;
  /** The original JSON, written back unchanged on save. */
  raw: Record<string, unknown>;
}

/** Parses `generation_config.json`; `source` names the file in errors. */
export function parseGenerationConfig(
  json: unknown,
  source = 'generation_config.json',
): GenerationConfig {
  if (typeof json !== 'object' || json === null || Array.isArray(json)) {
    throw new ModelsError('INVALID_ARGUMENT', `${source}: expected a JSON object`);
  }
  const raw = json as Record<string, unknown>;
  const opt = (key: string): number | undefined => {
    const v = raw[key];
    if (v == null) return undefined;
    if (typeof v !== 'number') {
      throw new ModelsError(
        'INVALID_ARGUMENT',
        `${source}: "${key}" must be a number, got ${JSON.stringify(v)}`,
      );
    }
    return v;
  };
  const eos = raw.eos_token_id;
  return {
    bosTokenId: opt('bos_token_id'),
    eosTokenIds:
      typeof eos === 'number'
        ? [eos]
        : Array.isArray(eos)
          ? eos.filter((x): x is number => typeof x === 'number')
          : [],
    padTokenId: opt('pad_token_id'),
    temperature: opt('temperature'),
    topP: opt('top_p'),
    topK: opt('top_k'),
    maxNewTokens: opt('max_new_tokens'),
    doSample: typeof raw.do_sample === 'boolean' ? raw.do_sample : undefined,
    raw: { ...raw },
  };
}
