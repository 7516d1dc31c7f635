/**
 * Rewrites an extracted answer into LaTeX the parser reads, dropping what carries no value (as
 * math_verify's normalisation does): `$` and `\left`/`\right`, spacing commands, `\dfrac`
 * `\tfrac` `\cfrac` (as `\frac`), braceless `\frac12` and `\sqrt3`, degree signs, percent signs
 * and words, thousands separators (`14{,}916`, `7,425,000`), a unit in `\text{}` / `\mbox{}`
 * after a value, plain unit words, and a trailing full stop. `\text{word}` alone stays a word.
 */
export function normaliseLatex(answer: string): string {
  let s = answer.trim();
  const latex = s.includes('$') || s.includes('\\');
  s = s.replace(/\\\$/g, '').replace(/\$/g, '');
  s = s.replace(/\\(?:left|right|big|Big|bigg|Bigg)(?![a-zA-Z])\s*/g, '');
  s = s.replace(/\\(?:displaystyle|limits)(?![a-zA-Z])/g, '');
  s = s.replace(/\\!/g, '').replace(/\\[,;: ]|\\q?quad(?![a-zA-Z])|~/g, ' ');
  s = s.replace(/\\[dtc]frac(?![a-zA-Z])/g, '\\frac');
  s = s
    .replace(/\\frac\s*(\d)\s*(\d)/g, '\\frac{$1}{$2}')
    .replace(/\\frac\s*(\d)\s*\{/g, '\\frac{$1}{');
  s = s.replace(/\\frac\s*\{([^{}]*)\}\s*(\d)/g, '\\frac{$1}{$2}');
  s = s.replace(/\\sqrt\s*(\d+|[a-zA-Z])/g, '\\sqrt{$1}');
  s = s.replace(/\^\s*\{?\\circ\}?|\\circ|\\degree|°/g, '');
  s = s.replace(/\\%|%|\s*\b(?:percentage|percent|pct)\b/g, '');
  s = plainNumber(s.replace(/\{,\}/g, ''), latex);
  s = s.replace(
    /\\(?:text|textbf|textit|textnormal|textrm|mbox|mathrm|mathbf|operatorname)\s*\{([^{}]*)\}/g,
    (_m, t: string) => `\\text{${t.trim()}}`,
  );
  s = s.replace(/\s*\\text\{(?:and|or|,)\}\s*/g, ', ');
  const textOnly = /^\\text\{([^{}]*)\}$/.exec(s.trim());
  if (textOnly) return (textOnly[1] ?? '').trim();
  s = s.replace(/\s*\\text\{[^{}]*\}(?:\s*\^\s*\{?\d\}?)?/g, '');
  s = s.replace(units, '$1');
  s = s.replace(/[.\s]+$/, '').replace(/^\s+/, '');
  return s.replace(/\s+/g, ' ').trim();
}

const units = new RegExp(
  `(\\d)\\s*(?:${[
    'cm',
    'mm',
    'km',
    'm',
    'meters?',
    'miles?',
    'inch(?:es)?',
    'feet',
    'ft',
    'kg',
    'g',
    'hours?',
    'minutes?',
    'seconds?',
    'days?',
    'years?',
    'dollars?',
    'cents?',
    'degrees?',
    'units?',
    'sq',
    'square',
  ].join('|')})(?:\\^?\\{?[23²³]\\}?)?\\.?$`,
);

/**
 * A whole answer that is one plain number: "7,425,000" -> "7425000" (groups of three after
 * each comma, not starting "0,"); outside LaTeX "1000,99" and "0,111" -> decimal point (in
 * LaTeX `$-2,1$` is a list). Anything else (an interval "[0,100]") is left as it is.
 */
function plainNumber(s: string, latex: boolean): string {
  const t = s.trim();
  if (/^-?[1-9]\d{0,2}(?:[, ]\d{3})+(?:\.\d+)?$/.test(t)) return t.replace(/[, ]/g, '');
  if (!latex && /^-?\d+,\d+$/.test(t)) return t.replace(',', '.');
  return s;
}
