/** Levenshtein edit distance (insert, delete, substitute each cost 1). */
export function editDistance(a: string, b: string): number {
  let prev = Array.from({ length: b.length + 1 }, (_, j) => j);
  for (let i = 1; i <= a.length; i++) {
    const row = [i];
    for (let j = 1; j <= b.length; j++) {
      const cost = a[i - 1] === b[j - 1] ? 0 : 1;
      row.push(Math.min(prev[j] + 1, row[j - 1] + 1, prev[j - 1] + cost));
    }
    prev = row;
  }
  return prev[b.length];
}

/**
 * The valid key nearest to `key`: smallest edit distance over full dotted keys, also trying
 * the last segment alone so `lr=1` suggests `actor.lr`. Ties go to the first declared key.
 */
export function closestKey(key: string, validKeys: readonly string[]): string | undefined {
  let best: string | undefined;
  let bestScore = Number.POSITIVE_INFINITY;
  for (const valid of validKeys) {
    const tail = valid.slice(valid.lastIndexOf('.') + 1);
    const score = Math.min(
      editDistance(key, valid),
      key.includes('.') ? Number.POSITIVE_INFINITY : editDistance(key, tail),
    );
    if (score < bestScore) {
      best = valid;
      bestScore = score;
    }
  }
  return best;
}
