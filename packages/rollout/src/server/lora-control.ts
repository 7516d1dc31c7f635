import type { LoraCheckpointEngine } from '../inference/lora-engine.js';
import type { RolloutEngine } from '../inference/rollout-engine.js';
import { HttpError, badRequest } from './http-io.js';
import type { ServerContext } from './server-context.js';

/** The engine's LoRA side, when it serves adapters (`rl2 serve --lora` or `--enable-lora`). */
function loraEngine(engine: RolloutEngine): LoraCheckpointEngine | undefined {
  return 'loadLoraAdapter' in engine ? (engine as LoraCheckpointEngine) : undefined;
}

function needLora(ctx: ServerContext): LoraCheckpointEngine {
  const engine = loraEngine(ctx.engine);
  if (!engine)
    throw badRequest(
      'this rl2 serve has no LoRA adapters: start it with --lora NAME=DIR or --enable-lora',
      'lora_path',
    );
  return engine;
}

/** A request's `lora_path` must name a loaded adapter (400 naming the loaded ones otherwise). */
export function checkLoraName(ctx: ServerContext, name: string): void {
  const loaded = needLora(ctx).loraAdapters;
  if (!loaded.has(name))
    throw badRequest(
      `lora_path "${name}" is not a loaded LoRA adapter (loaded: ${[...loaded.keys()].join(', ') || 'none'}); ` +
        'POST /load_lora_adapter {"lora_name", "lora_path"} first',
      'lora_path',
    );
}

/**
 * The adapter an OpenAI request's `model` names: a loaded adapter's name (as vLLM) or
 * `<served model>:<adapter>` (as SGLang); undefined for the base (any other `model`, as before).
 */
export function loraOfModel(ctx: ServerContext, model: unknown): string | undefined {
  const engine = loraEngine(ctx.engine);
  if (!engine || typeof model !== 'string') return undefined;
  const loaded = engine.loraAdapters;
  if (loaded.has(model)) return model;
  const prefix = `${ctx.servedModelName}:`;
  if (!model.startsWith(prefix)) return undefined;
  const name = model.slice(prefix.length);
  checkLoraName(ctx, name);
  return name;
}

/** /v1/models cards of the loaded adapters (children of the base, as vLLM lists them). */
export function loraModelCards(ctx: ServerContext) {
  const engine = loraEngine(ctx.engine);
  return [...(engine?.loraAdapters.keys() ?? [])].map((id) => ({
    id,
    object: 'model',
    created: 0,
    owned_by: 'rl2',
    root: id,
    parent: ctx.servedModelName,
    max_model_len: ctx.contextLength ?? null,
  }));
}

function readName(body: Record<string, unknown> | undefined, key: string): string {
  const v = body?.[key];
  if (typeof v !== 'string' || v === '')
    throw badRequest(`${key} must be a non-empty string, got ${JSON.stringify(v)}`, key);
  return v;
}

const answer = (engine: LoraCheckpointEngine) => ({
  success: true,
  error_message: '',
  loaded_adapters: Object.fromEntries(engine.loraAdapters),
});

/** POST /load_lora_adapter {lora_name, lora_path} (SGLang): serves the PEFT folder lora_path as lora_name (replacing one of that name). */
export async function handleLoadLora(
  ctx: ServerContext,
  body: Record<string, unknown> | undefined,
): Promise<unknown> {
  const engine = needLora(ctx);
  const name = readName(body, 'lora_name');
  const path = readName(body, 'lora_path');
  try {
    await engine.loadLoraAdapter(name, path);
  } catch (e) {
    const message = `Failed to load LoRA adapter ${name} from ${path}: ${(e as Error).message}`;
    throw new HttpError(400, message, { body: { success: false, error_message: message } });
  }
  return answer(engine);
}

/** POST /unload_lora_adapter {lora_name} (SGLang). */
export async function handleUnloadLora(
  ctx: ServerContext,
  body: Record<string, unknown> | undefined,
): Promise<unknown> {
  const engine = needLora(ctx);
  const name = readName(body, 'lora_name');
  checkLoraName(ctx, name);
  await engine.unloadLoraAdapter(name);
  return answer(engine);
}
