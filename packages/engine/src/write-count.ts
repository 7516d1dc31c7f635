// Writes over a tensor's own buffer (an in-place AdamW step) keep its dataId, so a copy made
// from its values (the 16-bit weights decoding streams) cannot tell it changed by the dataId
// alone: the in-place writers count their writes here, and such a copy keeps the count it was
// made at.
const writes = new WeakMap<object, number>();

/** Records one write over `t`'s buffer (its dataId stays). */
export function countWrite(t: { dataId: object }): void {
  writes.set(t.dataId, (writes.get(t.dataId) ?? 0) + 1);
}

/** How many times `t`'s buffer was written over in place (0 for one never written since made). */
export function writeCount(t: { dataId: object }): number {
  return writes.get(t.dataId) ?? 0;
}
