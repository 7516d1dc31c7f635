/**
 * Array-backed binary min-heap ordered by `less` (the smallest element is on top).
 * `less` must be a strict weak order; the partitioner gives it a strict total order, so the pop
 * sequence does not depend on the heap's internal layout (and matches Python's `heapq`).
 */
export class BinaryHeap<T> {
  private readonly items: T[] = [];
  constructor(private readonly less: (a: T, b: T) => boolean) {}

  get size(): number {
    return this.items.length;
  }

  peek(): T | undefined {
    return this.items[0];
  }

  push(item: T): void {
    const items = this.items;
    let pos = items.length;
    items.push(item);
    while (pos > 0) {
      const parent = (pos - 1) >> 1;
      if (!this.less(item, items[parent])) break;
      items[pos] = items[parent];
      pos = parent;
    }
    items[pos] = item;
  }

  pop(): T | undefined {
    const items = this.items;
    const top = items[0];
    const last = items.pop();
    if (items.length === 0 || last === undefined) return top;
    const n = items.length;
    let pos = 0;
    for (;;) {
      let child = 2 * pos + 1;
      if (child >= n) break;
      if (child + 1 < n && this.less(items[child + 1], items[child])) child += 1;
      if (!this.less(items[child], last)) break;
      items[pos] = items[child];
      pos = child;
    }
    items[pos] = last;
    return top;
  }
}
