import { type BoxedExpression, ComputeEngine } from '@cortex-js/compute-engine';
import { type AnswerNode, answerStructure } from './answer-structure.js';
import { normaliseLatex } from './normalise-latex.js';

const ce = new ComputeEngine();

/** Points every free variable takes in the numeric fallback (several, so that x^2 = x fails). */
const samplePoints = [0.731, 1.379, 2.113, -0.457];

/**
 * Whether two answers (as extracted) are the same mathematical object: the same shape (set,
 * tuple, interval, relation, word) with equal parts, each expression compared symbolically by
 * the Compute Engine (https://cortexjs.io/compute-engine/), then numerically: at every sample
 * point of the free variables both sides agree within a relative 1e-9.
 */
export function mathEqual(gold: string, pred: string): boolean {
  const a = normaliseLatex(gold);
  const b = normaliseLatex(pred);
  if (compact(a) === compact(b)) return true;
  const want = answerStructure(a);
  const got = answerStructure(b);
  // a response's working "1/2 = 10/9" answers with its last side; a gold equation stays one
  if (got.kind === 'equation' && want.kind !== 'equation')
    return nodesEqual(want, answerStructure(got.rhs));
  if (want.kind === 'equation' && got.kind !== 'equation')
    return nodesEqual(want, answerStructure(b, true));
  return nodesEqual(want, got);
}

const compact = (s: string) => s.replace(/\s+/g, '').replace(/\{(\w)\}/g, '$1');

function nodesEqual(a: AnswerNode, b: AnswerNode): boolean {
  switch (a.kind) {
    case 'expr':
      return b.kind === 'expr' && exprEqual(a.latex, b.latex);
    case 'text':
      return b.kind === 'text' && a.text === b.text;
    case 'relation':
      if (b.kind !== 'relation') return false;
      return (
        (a.op === b.op && exprEqual(a.lhs, b.lhs) && exprEqual(a.rhs, b.rhs)) ||
        (a.op === flip(b.op) && exprEqual(a.lhs, b.rhs) && exprEqual(a.rhs, b.lhs))
      );
    case 'equation':
      return (
        b.kind === 'equation' && proportional(`(${a.lhs})-(${a.rhs})`, `(${b.lhs})-(${b.rhs})`)
      );
    case 'tuple':
      return (
        b.kind === 'tuple' &&
        a.items.length === b.items.length &&
        a.items.every((x, i) => nodesEqual(x, b.items[i] as AnswerNode))
      );
    case 'set':
      return b.kind === 'set' && sameMembers(a.items, b.items);
    case 'union':
      return b.kind === 'union' && sameMembers(a.parts, b.parts);
    case 'interval':
      return (
        b.kind === 'interval' &&
        a.loClosed === b.loClosed &&
        a.hiClosed === b.hiClosed &&
        exprEqual(a.lo, b.lo) &&
        exprEqual(a.hi, b.hi)
      );
  }
}

const flip = (op: string) => ({ '<': '>', '>': '<', '<=': '>=', '>=': '<=', '!=': '!=' })[op] ?? op;

/** Unordered comparison: every member of one matches a distinct member of the other. */
function sameMembers(xs: AnswerNode[], ys: AnswerNode[]): boolean {
  if (xs.length !== ys.length) return false;
  const used = new Set<number>();
  return xs.every((x) => {
    const j = ys.findIndex((y, k) => !used.has(k) && nodesEqual(x, y));
    if (j < 0) return false;
    used.add(j);
    return true;
  });
}

/** Two LaTeX expressions: structurally the same, or equal at every sample point. */
export function exprEqual(a: string, b: string): boolean {
  if (compact(a) === compact(b)) return true;
  const x = parseLatex(a);
  const y = parseLatex(b);
  if (!x || !y) return false;
  if (x.isSame(y)) return true;
  const pairs = sampled(x, y);
  return pairs.length > 0 && pairs.every(([u, w]) => close(u[0], w[0]) && close(u[1], w[1]));
}

/** Equations l1 = r1 and l2 = r2 are the same when l1 - r1 = k (l2 - r2) for one k != 0. */
function proportional(a: string, b: string): boolean {
  const x = parseLatex(a);
  const y = parseLatex(b);
  if (!x || !y) return false;
  const pairs = sampled(x, y).filter(([u, w]) => u[1] === 0 && w[1] === 0 && w[0] !== 0);
  const k = pairs[0] ? pairs[0][0][0] / pairs[0][1][0] : 0;
  return pairs.length > 1 && k !== 0 && pairs.every(([u, w]) => close(u[0], k * w[0]));
}

/** Both expressions' [re, im] at each sample point of their free variables (finite points only). */
function sampled(x: BoxedExpression, y: BoxedExpression): [number, number][][] {
  const vars = [...new Set([...x.unknowns, ...y.unknowns])];
  const out: [number, number][][] = [];
  for (let p = 0; p < (vars.length ? samplePoints.length : 1); p++) {
    const at = Object.fromEntries(
      vars.map((v, i) => [
        v,
        ce.number((samplePoints[(p + i) % samplePoints.length] ?? 0) + i / 7),
      ]),
    );
    const u = valueAt(x, at);
    const w = valueAt(y, at);
    if (u && w) out.push([u, w]);
  }
  return out;
}

function parseLatex(latex: string): BoxedExpression | null {
  try {
    const e = ce.parse(latex);
    return e.isValid ? e : null;
  } catch {
    return null;
  }
}

/** [re, im] of the expression with its variables set, or null when it is not a finite number. */
function valueAt(e: BoxedExpression, at: Record<string, BoxedExpression>): [number, number] | null {
  try {
    const v = (Object.keys(at).length ? e.subs(at) : e).N();
    const re = v.re;
    const im = v.im;
    if (typeof re !== 'number' || typeof im !== 'number') return null;
    return Number.isFinite(re) && Number.isFinite(im) ? [re, im] : null;
  } catch {
    return null;
  }
}

const close = (u: number, w: number) =>
  Math.abs(u - w) <= 1e-9 * Math.max(1, Math.abs(u), Math.abs(w));
