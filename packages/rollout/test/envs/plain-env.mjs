export async function step(_state, action, answer) {
  return { nextState: null, reward: action === answer ? 1 : 0, done: true };
}
