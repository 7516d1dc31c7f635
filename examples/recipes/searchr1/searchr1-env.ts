/**
 * Search-R1's env (RL2's envs/searchr1.py): each turn the model either searches,
 * `<search>query</search>` (the passages come back as `<information>...</information>` in the
 * same sequence, reward 0), or answers, `<answer>...</answer>` (done; reward 1 when the
 * normalised answer equals one of the gold answers). Anything else is answered with RL2's
 * "My previous action is invalid" hint and the model tries again. Sample with
 * `stop: ['</search>', '</answer>']`. The service is RL2_SEARCH_URL (default
 * http://127.0.0.1:10000/search, see serve-search.ts); when it cannot be reached the sample fails.
 */
import { exactMatch } from './exact-match.js';

const searchUrl = () => process.env.RL2_SEARCH_URL ?? 'http://127.0.0.1:10000/search';

export const INVALID_ACTION =
  '\nMy previous action is invalid. If I want to search, I should put the query between ' +
  '<search> and </search>. If I want to give the final answer, I should put the answer ' +
  'between <answer> and </answer>. Let me try again.\n';

export const SEARCH_FAILED = '\nThe query exceeded the maximum length allowed. Let me try again.\n';

export async function step(
  state: string,
  action: string,
  answer: unknown,
): Promise<[string | null, number, boolean]> {
  const match = /<(search|answer)>([\s\S]*?)<\/\1>/.exec(action);
  if (!match) return [state + action + INVALID_ACTION, 0, false];
  const body = (match[2] ?? '').trim();
  if (match[1] === 'answer') return [null, exactMatch(body, answer) ? 1 : 0, true];
  const passage = await search(body);
  const observation =
    passage === null ? SEARCH_FAILED : `\n\n<information>${passage.trim()}</information>\n\n`;
  return [state + action + observation, 0, false];
}

/** The service's passage text, or null when it answered without one (RL2's "exceeded" case). */
async function search(query: string): Promise<string | null> {
  const url = searchUrl();
  let res: Response;
  try {
    res = await fetch(url, {
      method: 'POST',
      headers: { 'content-type': 'application/json' },
      body: JSON.stringify({ query }),
    });
  } catch (e) {
    const cause = (e as { cause?: { code?: string } }).cause?.code ?? (e as Error).message;
    throw new Error(
      `search service ${url} cannot be reached (${cause}): start it (node --import tsx ` +
        'examples/recipes/searchr1/serve-search.ts --corpus_path CORPUS.jsonl) or set RL2_SEARCH_URL',
    );
  }
  const body = (await res.json().catch(() => null)) as { passage?: unknown } | null;
  return res.ok && typeof body?.passage === 'string' ? body.passage : null;
}
