// A TypeScript env with types, an enum and a relative .ts import: loaded through tsx.
import { scoreOf } from './score.js';

enum Verdict {
  Wrong = 0,
  Right = 1,
}

interface Row {
  target: string;
}

export async function step(
  _state: string,
  action: string,
  answer: Row,
): Promise<[string | null, number, boolean]> {
  const verdict: Verdict = action.trim() === answer.target ? Verdict.Right : Verdict.Wrong;
  return [null, scoreOf(verdict), true];
}

export function reset(prompt: { prompt: string; answer?: unknown }): {
  state: string;
  answer: Row;
} {
  return { state: `${prompt.prompt}>`, answer: { target: String(prompt.answer) } };
}
