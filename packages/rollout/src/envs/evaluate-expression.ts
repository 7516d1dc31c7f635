import { RolloutError } from '../errors.js';

/**
 * Evaluates an arithmetic expression: numbers, + - * /, unary minus, parentheses; standard
 * precedence, left-associative. A small recursive-descent parser: no `eval`, so model output
 * cannot run code. Throws INVALID_ARGUMENT naming the position of the first bad character.
 *   expr   := term (('+' | '-') term)*
 *   term   := factor (('*' | '/') factor)*
 *   factor := '-' factor | number | '(' expr ')'
 */
export function evaluateExpression(source: string): number {
  const text = source.replace(/\s+/g, '');
  let pos = 0;
  const fail = (what: string): never => {
    throw new RolloutError(
      'INVALID_ARGUMENT',
      `cannot evaluate "${source}": ${what} at character ${pos + 1}`,
    );
  };
  if (text.length === 0 || text.length > 200) fail('expected 1 to 200 characters');

  function expr(): number {
    let v = term();
    while (text[pos] === '+' || text[pos] === '-') {
      const op = text[pos++];
      const r = term();
      v = op === '+' ? v + r : v - r;
    }
    return v;
  }
  function term(): number {
    let v = factor();
    while (text[pos] === '*' || text[pos] === '/') {
      const op = text[pos++];
      const r = factor();
      v = op === '*' ? v * r : v / r;
    }
    return v;
  }
  function factor(): number {
    if (text[pos] === '-') {
      pos += 1;
      return -factor();
    }
    if (text[pos] === '(') {
      pos += 1;
      const v = expr();
      if (text[pos] !== ')') fail('expected ")"');
      pos += 1;
      return v;
    }
    const m = /^\d+(\.\d+)?/.exec(text.slice(pos));
    if (!m) return fail('expected a number');
    pos += m[0].length;
    return Number(m[0]);
  }

  const value = expr();
  if (pos < text.length) fail(`unexpected "${text[pos]}"`);
  if (!Number.isFinite(value)) fail('the result is not finite (division by zero?)');
  return value;
}
