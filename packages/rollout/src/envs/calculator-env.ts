/**
 * A multi-turn tool env: the model may call a calculator with <calc>EXPR</calc>; the env
 * appends <result>VALUE</result> to the conversation (same sequence, env tokens masked out)
 * and the model goes on. A chat model's action ends with ChatML's <|im_end|> (Qwen, when the
 * tokenizer keeps special tokens); then the result comes back as a user turn followed by a
 * new assistant header, exactly as the chat template would render it; <answer>N</answer> ends the episode with reward 1 when N equals
 * the answer. No tag at all ends it with reward 0. Point `rollout.env_path` at this file and
 * sample with `stop: ['</calc>', '</answer>']` so the model yields the turn right after a call.
 */
import { evaluateExpression } from './evaluate-expression.js';

const calc = /<calc>([\s\S]*?)<\/calc>/;
const imEnd = '<|im_end|>';
const final = /<answer>\s*(-?\d+(?:\.\d+)?)\s*<\/answer>/;

export async function step(
  state: string,
  action: string,
  answer: unknown,
): Promise<[string | null, number, boolean]> {
  const given = final.exec(action);
  if (given) return [null, Number(given[1]) === Number(answer) ? 1 : 0, true];
  const call = calc.exec(action);
  if (!call) return [null, 0, true];
  let result: string;
  try {
    result = formatNumber(evaluateExpression(call[1]));
  } catch (e) {
    result = `error: ${(e as Error).message}`;
  }
  // The action is kept verbatim, so state + action is a prefix of the next state: the turns
  // share one sequence (RL2's prefix merge) and the <result> tokens get action mask 0.
  const observation = action.endsWith(imEnd)
    ? `\n<|im_start|>user\n<result>${result}</result>${imEnd}\n<|im_start|>assistant\n`
    : `\n<result>${result}</result>\n`;
  return [`${state}${action}${observation}`, 0, false];
}

function formatNumber(x: number): string {
  return Number.isInteger(x) ? String(x) : String(Number(x.toFixed(6)));
}
