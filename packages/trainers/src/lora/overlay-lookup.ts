import type * as tf from '@tensorflow/tfjs-core';

/** What a recomputed layer may ask a lookup for (@rl2/models `LayerParamSource`). */
interface LayerSource {
  inputs: tf.Tensor[];
  open(inputs: tf.Tensor[]): ReadonlyMap<string, tf.Tensor>;
}

/** A parameter lookup, with the recomputed layers' source when it has one (a ZeRO-3 pass lookup). */
type Lookup = ReadonlyMap<string, tf.Tensor> & {
  layerSource?(names: string[]): LayerSource | undefined;
};

/**
 * Two parameter lookups read as one, `top`'s names first: under FSDP a LoRA model's trained
 * tensors (adapters, modules_to_save copies shadowing the originals) over its frozen base,
 * each a ZeRO-3 pass lookup that gathers a unit when it is read. A recomputed layer gets its
 * source from `top` (the trained shards are its inputs, differentiated in its backward); the
 * base is read through `bottom` in each run of the layer (gathered again in the backward, where
 * no gradient reaches it).
 */
export class OverlayLookup extends Map<string, tf.Tensor> {
  constructor(
    private readonly top: Lookup,
    private readonly bottom: Lookup,
  ) {
    super();
  }
  override get(name: string): tf.Tensor | undefined {
    return this.top.has(name) ? this.top.get(name) : this.bottom.get(name);
  }
  override has(name: string): boolean {
    return this.top.has(name) || this.bottom.has(name);
  }
  override keys(): MapIterator<string> {
    const names = new Set([...this.top.keys(), ...this.bottom.keys()]);
    return names[Symbol.iterator]() as MapIterator<string>;
  }
  override get size(): number {
    return [...this.keys()].length;
  }
  layerSource(names: string[]): LayerSource | undefined {
    const source = this.top.layerSource?.(names.filter((n) => this.top.has(n)));
    if (!source) return undefined;
    return {
      inputs: source.inputs,
      open: (inputs) => new OverlayLookup(source.open(inputs), this.bottom),
    };
  }
}
