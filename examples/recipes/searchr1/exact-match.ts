/**
 * SQuAD-style answer normalisation, as RL2's envs/searchr1.py and Search-R1 do it: lower case,
 * punctuation removed, the articles a / an / the removed, whitespace collapsed.
 */
export function normaliseAnswer(s: string): string {
  const lower = s.toLowerCase();
  const noPunct = lower.replace(/[!"#$%&'()*+,\-./:;<=>?@[\\\]^_`{|}~]/g, '');
  const noArticles = noPunct.replace(/\b(a|an|the)\b/g, ' ');
  return noArticles.split(/\s+/).filter(Boolean).join(' ');
}

/** Whether the prediction equals one of the gold answers (a string or a list) once normalised. */
export function exactMatch(pred: string, gold: unknown): boolean {
  const golds = (Array.isArray(gold) ? gold : [gold]).map((g) => normaliseAnswer(String(g)));
  return golds.includes(normaliseAnswer(pred));
}
