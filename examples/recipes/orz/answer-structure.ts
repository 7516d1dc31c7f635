/**
 * The shape of a normalised answer, read before any algebra: a relation (`x \ge 5`), a union
 * of intervals and sets, an interval with open or closed ends, a set (`\{1,2\}` or a bare list
 * `-2, 1`, unordered), a tuple (`(6,31,-1)`, ordered), a word (`Evelyn`, a choice letter), or
 * one expression. `a \pm b` is the set {a + b, a - b}; `x = ... = v` and `x \approx v` are v;
 * any other `l = r` is an equation.
 */
export type AnswerNode =
  | { kind: 'expr'; latex: string }
  | { kind: 'text'; text: string }
  | { kind: 'relation'; op: RelationOp; lhs: string; rhs: string }
  | { kind: 'equation'; lhs: string; rhs: string }
  | { kind: 'set'; items: AnswerNode[] }
  | { kind: 'tuple'; items: AnswerNode[] }
  | { kind: 'interval'; lo: string; hi: string; loClosed: boolean; hiClosed: boolean }
  | { kind: 'union'; parts: AnswerNode[] };

export type RelationOp = '<' | '>' | '<=' | '>=' | '!=';

const relationOps: [RegExp, RelationOp][] = [
  [/\\leq?(?![a-zA-Z])|<=|≤|\\leqslant/, '<='],
  [/\\geq?(?![a-zA-Z])|>=|≥|\\geqslant/, '>='],
  [/\\neq?(?![a-zA-Z])|!=|≠/, '!='],
  [/\\lt(?![a-zA-Z])|</, '<'],
  [/\\gt(?![a-zA-Z])|>/, '>'],
];

/** `keepEquations`: `x = v` stays an equation (to compare with a gold equation such as 2x+4y-3=0). */
export function answerStructure(answer: string, keepEquations = false): AnswerNode {
  const s = answer.trim().replace(/\s+(?:and|or)\s+/g, ', ');
  const eq = keepEquations ? s : valueOfEquation(s);
  if (eq !== s) return answerStructure(eq);
  const relation = asRelation(s);
  if (relation) return relation;
  const sides = splitTop(s, /=/);
  if (sides.length === 2 && !/[<>!\\]$/.test(sides[0] ?? ''))
    return { kind: 'equation', lhs: sides[0] ?? '', rhs: sides[1] ?? '' };
  const union = splitTop(s, /\\cup(?![a-zA-Z])|∪/);
  if (union.length > 1) return { kind: 'union', parts: union.map((p) => answerStructure(p)) };
  const interval = /^([[(])(.*)([\])])$/s.exec(s);
  if (interval) {
    const items = splitTop(interval[2] ?? '', /,/);
    const open = interval[1] === '(' && interval[3] === ')';
    if (items.length === 2 && !open)
      return {
        kind: 'interval',
        lo: items[0] ?? '',
        hi: items[1] ?? '',
        loClosed: interval[1] === '[',
        hiClosed: interval[3] === ']',
      };
    if (items.length >= 2 && splitTop(s, /,/).length === 1)
      return { kind: 'tuple', items: items.map((p) => answerStructure(p)) };
  }
  const set = /^\\\{(.*)\\\}$/s.exec(s);
  if (set) return { kind: 'set', items: itemsOf(set[1] ?? '') };
  if (splitTop(s, /,|;/).length > 1) return { kind: 'set', items: itemsOf(s) };
  const pm = plusMinusPair(s);
  if (pm) return { kind: 'set', items: pm };
  const choice = /^\(?([A-E])\)?$/.exec(s);
  if (choice) return { kind: 'text', text: choice[1] ?? '' };
  if (/^[A-Za-z][A-Za-z' -]*[A-Za-z]$/.test(s) && /[a-z]{2,}/.test(s) && !/\\/.test(s))
    return { kind: 'text', text: s.toLowerCase() };
  return { kind: 'expr', latex: s };
}

/** Items of a set or list (no top-level comma left in each), each `a \pm b` as its two values. */
function itemsOf(body: string): AnswerNode[] {
  return splitTop(body, /,|;/).flatMap((item) => plusMinusPair(item) ?? [answerStructure(item)]);
}

/** `a \pm b` (one top-level \pm or \mp) as [a + b, a - b]; null for anything else. */
function plusMinusPair(s: string): AnswerNode[] | null {
  const parts = splitTop(s, /\\pm(?![a-zA-Z])|±|\\mp(?![a-zA-Z])/);
  if (parts.length !== 2) return null;
  const [a, b] = parts as [string, string];
  return [plusMinus(a, b, '+'), plusMinus(a, b, '-')];
}

const plusMinus = (a: string, b: string, sign: string): AnswerNode => ({
  kind: 'expr',
  latex: a.trim() ? `${a}${sign}(${b})` : `${sign}(${b})`,
});

/** `x = 5+5+1 = 11` -> `11`, `k=\frac13` -> `\frac13`, `x \approx 11` -> `11`; `7 = 11a+c` stays. */
function valueOfEquation(s: string): string {
  const parts = splitTop(s, /=|\\approx(?![a-zA-Z])|≈/);
  if (parts.length < 2) return s;
  const [first] = parts;
  if (!isName(first ?? '')) return s;
  // x = 1/3 \approx 0.33: the exact value, not the approximation
  const approx = splitTop(s, /\\approx(?![a-zA-Z])|≈/);
  const exact = splitTop(approx[0] ?? '', /=/);
  const value = approx.length > 1 && exact.length > 1 ? exact.at(-1) : parts.at(-1);
  return (value ?? s).trim();
}

/** A left-hand side that names the answer: x, k, f(2), a_n, (p,q,r), \theta. */
function isName(lhs: string): boolean {
  return /^\s*(?:[A-Za-z](?:_\{?\w+\}?)?(?:\([^()]*\))?|\\[a-zA-Z]+|\([A-Za-z, ]+\))\s*$/.test(lhs);
}

function asRelation(s: string): AnswerNode | null {
  for (const [re, op] of relationOps) {
    const parts = splitTop(s, re);
    if (parts.length === 2 && !relationOps.some(([other]) => other.test(parts.join(' '))))
      return { kind: 'relation', op, lhs: (parts[0] ?? '').trim(), rhs: (parts[1] ?? '').trim() };
  }
  return null;
}

/** Splits at `sep` outside (), [], {} and \{ \} (an interval's mixed brackets count as a pair). */
export function splitTop(s: string, sep: RegExp): string[] {
  const out: string[] = [];
  let depth = 0;
  let start = 0;
  const glob = new RegExp(sep.source, 'y');
  for (let i = 0; i < s.length; i++) {
    const c = s[i] ?? '';
    if ('([{'.includes(c)) depth += 1;
    else if (')]}'.includes(c)) depth -= 1;
    else if (depth === 0) {
      glob.lastIndex = i;
      const m = glob.exec(s);
      if (m && m[0].length > 0) {
        out.push(s.slice(start, i).trim());
        start = i + m[0].length;
        i = start - 1;
      }
    }
  }
  out.push(s.slice(start).trim());
  return out.filter((p, i) => p.length > 0 || i > 0);
}
