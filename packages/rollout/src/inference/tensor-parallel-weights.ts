import {
  type DecoderModel,
  type LoraModel,
  type ParamMap,
  attachLora,
  disposeParams,
  isLoraParam,
} from '@rl2/models';
import { type ProcessGroup, tensorParallelShape } from '@rl2/parallel';
import { RolloutError } from '../errors.js';
import { openLoraAdapter } from './open-lora-adapter.js';
import { type AgreedLoad, agreeOn, loadAgreed } from './tensor-parallel-commands.js';

/** A LoRA adapter as one rank of `rl2 serve --tp N` holds it: its parts, on that rank's base shards. */
export interface RankAdapter {
  readonly path: string;
  /** Its models' slot in the group's generation (the base's is 0). */
  readonly slot: number;
  readonly lora: LoraModel;
  readonly rankBytes: number[];
}

/**
 * What every rank of `rl2 serve --tp N` holds: its shards of the base and its parts of each
 * LoRA adapter served by name. The lead and the followers change it by the same calls, in the
 * same order (the lead's commands), so the slots agree.
 */
export interface RankWeights {
  base: AgreedLoad;
  readonly adapters: Map<string, RankAdapter>;
}

/** The model generating in `slot`: the base (0) or an adapter's. */
export function modelOfSlot(weights: RankWeights, slot: number): DecoderModel {
  if (slot === 0) return weights.base.loaded.model;
  for (const a of weights.adapters.values()) if (a.slot === slot) return a.lora.model;
  throw new RolloutError(
    'ENGINE_FAILED',
    `no LoRA adapter in slot ${slot} on this rank; are every rank's rl2 versions the same?`,
  );
}

/** Each rank's parameter bytes: its base shards and its adapters' parts. */
export function rankBytesOf(weights: RankWeights): number[] {
  const adapters = [...weights.adapters.values()];
  return weights.base.rankBytes.map((b, r) =>
    adapters.reduce((sum, a) => sum + (a.rankBytes[r] as number), b),
  );
}

function adapterBytes(lora: LoraModel): number {
  let n = 0;
  for (const t of lora.adapters.values()) n += t.size * 4;
  return n;
}

/** `name` served from the PEFT folder `path` on every rank, all or none (replacing one of that name). */
export async function loadRankAdapter(
  weights: RankWeights,
  name: string,
  path: string,
  slot: number,
  tp: ProcessGroup,
  log: (line: string) => void,
): Promise<void> {
  const { value, rankBytes } = await agreeOn(
    path,
    tp,
    log,
    () => openLoraAdapter(weights.base.loaded.model, path, tp),
    adapterBytes,
    (lora) => disposeParams(lora.adapters),
  );
  const old = weights.adapters.get(name);
  weights.adapters.set(name, { path, slot, lora: value, rankBytes });
  if (old) disposeParams(old.lora.adapters);
}

/** Stops serving `name` on this rank (its requests have ended). */
export function unloadRankAdapter(weights: RankWeights, name: string): void {
  const old = weights.adapters.get(name);
  weights.adapters.delete(name);
  if (old) disposeParams(old.lora.adapters);
}

/**
 * Every rank loads its shards of the checkpoint `dir` (all or none) and puts its adapters'
 * parts on them (its modules_to_save copies kept: the adapter's, not the new base's).
 */
export async function reloadRankBase(
  weights: RankWeights,
  dir: string,
  tp: ProcessGroup,
  log: (line: string) => void,
): Promise<void> {
  const next = await loadAgreed(dir, tp, log);
  const old = weights.base;
  weights.base = next;
  for (const [name, a] of weights.adapters) {
    const lora = a.lora.adapters;
    const matrices: ParamMap = new Map([...lora].filter(([n]) => isLoraParam(n)));
    const copies = new Map([...lora].filter(([n]) => !isLoraParam(n)));
    // the shapes were checked (the same architecture): no rank can fail here
    const moved = attachLora(next.loaded.model, matrices, a.lora.spec, copies, (n, shape) =>
      tensorParallelShape(n, shape, tp.size),
    );
    weights.adapters.set(name, { ...a, lora: moved });
    disposeParams(copies);
  }
  disposeParams(old.loaded.model.params);
}

/** Frees everything this rank holds. */
export function freeRankWeights(weights: RankWeights): void {
  for (const a of weights.adapters.values()) disposeParams(a.lora.adapters);
  weights.adapters.clear();
  disposeParams(weights.base.loaded.model.params);
}
