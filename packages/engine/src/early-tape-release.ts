// Frees what the gradient tape saved for a node as soon as backprop has moved past it.
// tfjs 4.22 keeps every saved activation (its clones) until the whole backward pass ends and
// only then disposes them, so peak memory is all activations plus all their gradients. A
// node's saved tensors are read only by its own gradient thunks, which backprop calls right
// after `node.gradient(dys)`, before it moves to the next node: releasing them when the next
// node starts bounds the backward to activations not yet reached plus gradients so far.
import type { Tensor } from '@tensorflow/tfjs-core';

/** The parts of tfjs's Engine this touches (internal in 4.22, stable since 1.x). */
interface TapeEngine {
  state: { gradientDepth: number; activeTape: TapeNode[] | null };
  addTapeNode(...args: unknown[]): void;
}
interface TapeNode {
  saved?: Tensor[];
  gradient?: (dys: Tensor[]) => unknown;
}

const INSTALLED = Symbol.for('rl2.earlyTapeRelease');

/**
 * Wraps `engine.addTapeNode` so each node's gradient first disposes the saved tensors of the
 * node processed before it. Only in first-order backward passes (gradientDepth 0, the case
 * where tfjs itself disposes them all at the end): higher-order gradients keep the tape.
 * Idempotent per engine.
 */
export function installEarlyTapeRelease(engine: TapeEngine): void {
  const marked = engine as unknown as Record<symbol, boolean>;
  if (marked[INSTALLED]) return;
  marked[INSTALLED] = true;
  const add = engine.addTapeNode.bind(engine);
  let pending: Tensor[] | undefined;
  engine.addTapeNode = (...args: unknown[]) => {
    add(...args);
    const tape = engine.state.activeTape;
    const node = tape?.[tape.length - 1];
    const gradient = node?.gradient;
    if (!node || !gradient) return;
    node.gradient = (dys: Tensor[]) => {
      if (engine.state.gradientDepth === 0 && pending) for (const t of pending) t.dispose();
      pending = undefined;
      const out = gradient(dys);
      if (engine.state.gradientDepth === 0) pending = node.saved;
      return out;
    };
  };
}
