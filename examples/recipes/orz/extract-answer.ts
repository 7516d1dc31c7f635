/**
 * The final answer of a model's response, found as math_verify (github.com/huggingface/Math-Verify)
 * finds it, in order of priority: the last `\boxed{...}` (or `\fbox{...}`, nested braces
 * matched), else the text after the last "final answer is" / "answer:" (its last math span or
 * number), else the last math span (`$$...$$`, `\[...\]`, `\(...\)`, `$...$`), else the last
 * number. A short text with none of these (a gold answer such as `\frac{1}{2}`) is its own
 * answer. Answers found as LaTeX come back between `$` signs (read as LaTeX: `$-2,1$` is a
 * list, plain `1,22` a decimal comma). Returns null when nothing is found.
 */
export function extractAnswer(text: string): string | null {
  const boxed = lastBoxed(text);
  if (boxed !== null) return `$${boxed}$`;
  const stated = finalAnswerSentence(text);
  if (stated !== null) return lastMathOrNumber(stated) ?? stated;
  const span = lastMathSpan(text);
  if (span !== null) return `$${span.body}$`;
  if (looksLikeMath(text)) return text.trim();
  return lastNumber(text)?.text ?? null;
}

/** Whichever ends later in the text: its last math span (as `$...$`) or its last number. */
function lastMathOrNumber(text: string): string | null {
  const span = lastMathSpan(text);
  const num = lastNumber(text);
  if (span && (!num || span.end >= num.end)) return `$${span.body}$`;
  return num?.text ?? null;
}

/** Short, and no word of three letters or more outside a LaTeX command (`\sqrt`, `\text{}`). */
function looksLikeMath(text: string): boolean {
  const t = text.trim().replace(/\\text\{[^{}]*\}/g, '');
  return t.length > 0 && text.trim().length <= 80 && !/(?<![\\a-zA-Z])[a-zA-Z]{3,}/.test(t);
}

/** The content of the last `\boxed{...}` / `\fbox{...}` (or `\boxed 5`), braces balanced. */
export function lastBoxed(text: string): string | null {
  const at = Math.max(text.lastIndexOf('\\boxed'), text.lastIndexOf('\\fbox'));
  if (at < 0) return null;
  let i = at + (text.startsWith('\\boxed', at) ? 6 : 5);
  while (text[i] === ' ') i += 1;
  if (text[i] !== '{') {
    const bare = /^[^\s$.,]+/.exec(text.slice(i));
    return bare ? bare[0] : null;
  }
  let depth = 0;
  for (let j = i; j < text.length; j++) {
    if (text[j] === '{') depth += 1;
    else if (text[j] === '}') {
      depth -= 1;
      if (depth === 0) return text.slice(i + 1, j).trim();
    }
  }
  // unclosed (a response cut at max_new_tokens): what follows is the answer
  return (
    text
      .slice(i + 1)
      .replace(/\$\s*$/, '')
      .trim() || null
  );
}

function finalAnswerSentence(text: string): string | null {
  const re =
    /(?:final answer is|the answer is|answer\s*:)\s*([\s\S]+?)(?:\.\s*I hope|\.?\s*$|\.\s+\S)/gi;
  let last: string | null = null;
  for (const m of text.matchAll(re)) last = m[1] ?? null;
  if (last === null) return null;
  // "Final Answer: The final answer is 7": the innermost statement
  return finalAnswerSentence(last) ?? last.trim().replace(/[.]$/, '');
}

const spans = [
  /\$\$([\s\S]+?)\$\$/g, // display $$...$$ (may span lines)
  /\\\[([\s\S]+?)\\\]/g, // display \[...\]
  /\\\(([^\n]+?)\\\)/g, // inline \(...\) (one line)
  /(?<![\\$])\$(?!\$)((?:\\\$|[^\n$])+?)(?<!\\)\$/g, // inline $...$ (one line, \$ is a dollar sign)
];

/** The last math span of the text (by where it ends), its delimiters removed. */
export function lastMathSpan(text: string): { body: string; end: number } | null {
  let best: { end: number; body: string } | null = null;
  for (const re of spans) {
    for (const m of text.matchAll(re)) {
      const end = (m.index ?? 0) + m[0].length;
      if (!best || end > best.end) best = { end, body: (m[1] ?? '').trim() };
    }
  }
  return best?.body ? best : null;
}

/**
 * The last number in plain text: thousands separators (1,000 or 1 000), decimal points or
 * commas, a leading `.4`, fractions a/b. A number glued to letters before it (AZYUK2A) is part
 * of a word; units after it (1,000.99m², 2,74 $) are fine.
 */
export function lastNumber(text: string): { text: string; end: number } | null {
  const re = /(?<![A-Za-z\d.,])-?(?:\d{1,3}(?:[, ]\d{3})+|\d+)?(?:[.,]\d+)?(?:\/\d+)?/g;
  const nums = [...text.matchAll(re)]
    .filter((m) => /\d/.test(m[0]))
    .map((m) => ({ text: m[0].trim(), end: (m.index ?? 0) + m[0].length }));
  return nums.at(-1) ?? null;
}
