/**
 * Guess the number, GEM's smallest multi-turn game (github.com/axon-rl/gem,
 * game:GuessTheNumber): the row's answer is a secret integer; each turn the model guesses with
 * `\boxed{N}` and hears "higher" or "lower" until it is right (reward 1, done) or
 * rollout.max_turns runs out (reward 0). A turn without a boxed integer is told how to guess.
 * The reply comes back as a user turn in the same sequence (state + action is a prefix of the
 * next state, so the turns merge and the env's tokens are masked out of the loss).
 */
const imEnd = '<|im_end|>';

export async function step(
  state: string,
  action: string,
  answer: unknown,
): Promise<[string | null, number, boolean]> {
  const secret = Number(answer);
  const guess = lastBoxedInteger(action);
  if (guess === secret) return [null, 1, true];
  const reply =
    guess === null
      ? 'Give one whole number as \\boxed{N}, e.g. \\boxed{8}.'
      : `${guess} is wrong: the number is ${guess < secret ? 'higher' : 'lower'}. Guess again.`;
  return [state + action + userTurn(action, reply), 0, false];
}

/** The last `\boxed{N}` with an integer N in the text, or null. */
export function lastBoxedInteger(text: string): number | null {
  const all = [...text.matchAll(/\\boxed\{\s*(-?\d+)\s*\}/g)];
  const last = all.at(-1)?.[1];
  return last === undefined ? null : Number(last);
}

// A chat model's turn ends with ChatML's <|im_end|>: the reply is a user turn and a new assistant
// header, as the chat template renders them; without it the reply follows on a new line.
function userTurn(action: string, reply: string): string {
  return action.endsWith(imEnd)
    ? `\n<|im_start|>user\n${reply}${imEnd}\n<|im_start|>assistant\n`
    : `\n${reply}\n`;
}
