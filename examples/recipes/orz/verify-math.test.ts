import { describe, expect, it } from 'vitest';
import { extractAnswer, lastBoxed } from './extract-answer.js';
import { verifyMath } from './verify-math.js';

/**
 * [gold, response, equivalent]. Rows marked mv are cases of math_verify's own tests
 * (github.com/huggingface/Math-Verify, tests/test_all.py) with the verdict it gives.
 */
const table: [string, string, boolean][] = [
  // numbers and their separators (mv test_number_extraction)
  ['-5', '-5', true],
  ['7425000', '7,425,000', true],
  ['1000', '1 000', true],
  ['1000', '1000.0', true],
  ['1000.0', '1,000.0', true],
  ['1000.99', '1000,99', true],
  ['1,22', '1.22', true],
  ['2.74', 'Soucis : 2,74 $ a..', true],
  ['0.4', '.4', true],
  ['1000.99', '1,000.99', true],
  ['1000.99', '$1,000.99', true],
  ['1000.99', '1,000.99$', true],
  ['1000.99', 'the number is not 10 which is 1,000.99€', true],
  ['1000.99', 'so the number is 10 which is 1,000.99m²', true],
  ['0,111', '0.111', true],
  ['2', 'AZYUK2A', false],
  // fractions (mv test_simple_fraction_notation, test_latex_notation)
  ['10/9', '\\frac{10}{9}', true],
  ['-10/9', '-\\frac{10}{9}', true],
  ['$1/3$', '$\\frac13 $', true],
  ['$1$', '$\\frac3{3} $', true],
  ['$1/3$', '$\\cfrac{1}{3} $', true],
  ['$1/3$', '$\\dfrac{1}{3} $', true],
  ['$1/3$', '$\\tfrac{1}{3} $', true],
  ['$1/3$', '$ 1/3 $', true],
  ['$1/3$', '$\\left( \\frac{1}{3} \\right)$', true],
  ['$1/3$', '$\\boxed{\\frac{1}{3}}$', true],
  ['$1/3$', '$\\frac{1}{3} \\text{meters}$', true],
  ['$1/3$', '$\\frac{1}{3} \\textbf{meters}$', true],
  ['$1/3$', '$k = \\frac{1}{3}$', true],
  ['$\\sqrt{3}$', '$\\sqrt3 $', true],
  ['$9$', 'Answer \\[ 9 \\]', true],
  ['$9$', 'Answer $ 9 $', true],
  ['$9$', 'Answer $$ 9 $$', true],
  ['$9$', 'Answer \\( 9 \\)', true],
  ['$10$', 'Answer \\( (9+1) \\)', true],
  ['$9$', 'Answer \\[ \n 9 \n \\]', true],
  ['$9$', 'Answer $$ \n 9 \n $$', true],
  ['$10/9$', 'Answer $ \\frac{1}{2} \\$ = \\frac{10}{9} $', true],
  // sets and intervals (mv test_sets_handling and others)
  ['$[0,1)$', '$[0,1)$', true],
  ['$[0,9)$', '$[0,1)$', false],
  ['$(0,9)$', '$[0,9)$', false],
  ['$1$', '$-[0,1)$', false],
  ['$[0,1)$', 'Final Answer: The final answer is $(0, 1)$. I hope it is correct.', false],
  ['$[-3,2]$', 'The domain is $\\boxed{(-\\infty, -3] \\cup [2, \\infty)}$.', false],
  [
    '$[-1, -\\frac{1}{2}) \\cup (-\\frac{1}{2}, 0) \\cup (0, 1) \\cup (1, \\infty)$',
    'The solution set is $\\boxed{[-1, -\\tfrac12) \\cup (-\\tfrac12, 0) \\cup (0, 1) \\cup (1, \\infty)}.$',
    true,
  ],
  ['$(1, \\infty) \\cup [-1, 0)$', '$[-1,0) \\cup (1,\\infty)$', true],
  ['x \\in \\boxed{\\{-1\\} \\cup [0,7)}.$', 'x \\in \\boxed{\\{-1\\} \\cup [0,7)}.$', true],
  ['$(\\frac{3}{5},\\frac{8}{3}]$', '$(0.6,\\frac{16}{6}]$', true],
  ['$(\\frac{3}{5},\\frac{8}{3}]$', '$(0.6,\\frac{8}{3})$', false],
  ['$\\{1,2,3\\}$', '$\\{3,1,2\\}$', true],
  ['$\\{1,2,3\\}$', '$\\{1,2\\}$', false],
  ['$-2,1$', 'the only integer roots are $\\boxed{-2,1}.$', true],
  ['$-2,1$', '$\\boxed{1, -2}$', true],
  ['$-2,1$', '$\\boxed{1, 2}$', false],
  ['$\\{1\\pm\\sqrt{5},-2\\}$', 'the answer is $\\boxed{\\{1\\pm\\sqrt{5},-2\\}}.$', true],
  ['$1 \\pm \\sqrt{19}$', 'By the quadratic formula, $x = \\boxed{1 \\pm \\sqrt{19}}.$', true],
  ['$3 \\pm 2 \\sqrt{2}$', 'the roots are $x = \\boxed{3 \\pm 2 \\sqrt{2}}.$', true],
  ['$3 \\pm 2 \\sqrt{2}$', '$\\boxed{3+2\\sqrt{2}, 3-2\\sqrt{2}}$', true],
  ['$3 \\pm 2 \\sqrt{2}$', '$\\boxed{3+2\\sqrt{2}}$', false],
  // tuples
  [
    '$(3, \\frac{\\pi}{2})$',
    'the polar coordinates are $\\boxed{\\left( 3, \\frac{\\pi}{2} \\right)}.$',
    true,
  ],
  ['$(6,31,-1)$', 'we find $(p,q,r) = \\boxed{(6,31,-1)}.$', true],
  ['$(6,31,-1)$', '$\\boxed{(31,6,-1)}$', false],
  ['$(1,\\frac{9}{2})$', '$(1,4.5)$', true],
  [
    '$\\left(\\frac{4}{5},\\frac{1}{5}\\right)$',
    'Thus, $(t,u) = \\boxed{\\left( \\frac{4}{5}, \\frac{1}{5} \\right)}.$',
    true,
  ],
  ['$(7,6)$', 'So, the ordered pair $(x, y)$ that solves the system is $(7, 6)$.', true],
  // percentages (mv test_percent_notation)
  ['$28\\%$', '28 percent', true],
  ['$28\\%$', '28 pct', true],
  ['$28\\%$', '28 %', true],
  ['$28\\%$', '$28$ %', true],
  ['$28\\%$', '$28$ percent', true],
  ['$28\\%$', '$\\boxed{28}$ pct', true],
  ['$28\\%$', '$\\boxed{28 pct}', true],
  ['$28\\%$', '$\\boxed{28 percent}', true],
  ['$28\\%$', '$\\boxed{28 percentage}', true],
  ['$28\\%$', 'making for a total loss of $\\boxed{28\\%}$.', true],
  ['$28\\%$', '$\\boxed{72\\%}$', false],
  // units, degrees, text (mv test_latex_notation_math)
  ['$90^\\circ$', 'Hence, the angle between the lines is $\\boxed{90^\\circ}.$', true],
  ['$90^\\circ$', '$\\boxed{90}$', true],
  ['$90^\\circ$', '$\\boxed{45^{\\circ}}$', false],
  ['$15\\mbox{ cm}^2$', '$$\\frac{1}{2}\\times 3 \\times 10 = \\boxed{15\\mbox{ cm}^2}.$$', true],
  ['$125$ miles', 'The distance is $\\boxed{125\\textnormal{ miles}}.$', true],
  ['10', 'The rope is $\\boxed{10 \\text{ cm}}$ long.', true],
  ['$\\text{Evelyn}$', 'Therefore, $\\boxed{\\text{Evelyn}}$ is our answer.', true],
  ['$\\text{Evelyn}$', 'Therefore, $\\boxed{\\text{Carla}}$ is our answer.', false],
  ['$204_5$', 'for a quotient of $\\boxed{204_5}$. Note that', true],
  [
    '$14916$',
    'The smallest possible value of $N$ is $\\boxed{14{,}916}$. I hope it is correct.',
    true,
  ],
  ['12000023', 'Final Answer: The final answer is 12,000,023. I hope it is correct.', true],
  ['$16386.20$', 'worth $\\boxed{\\$16,\\!386.20}$ at the end', true],
  [
    '\\boxed{12\\text{ and }13}',
    'the graph of the sum is located between $\\boxed{12 $ and $13 }. $',
    true,
  ],
  // expressions (mv test_latex_notation_math, test_complex_math_expressions)
  ['$2-2p$', 'Since $x<2$, ... Thus $x-p=\\boxed{2-2p}$.', true],
  ['$\\frac{14}{3}$', '$=2+\\frac{5}{3}+1=\\boxed{\\frac{14}{3}}$', true],
  ['$3\\sqrt{13}$', '\\sqrt{117} = \\boxed{3\\sqrt{13}}. \\end{align*}', true],
  ['$\\frac{3}{56}$', 'so \\[p(8) = \\frac{q(8) + 8}{8^2 - 1} = \\boxed{\\frac{3}{56}}.\\]', true],
  [
    '$2 \\sin b \\cos a$',
    '\\[\\sin (a + b) - \\sin (a - b) = \\boxed{2 \\sin b \\cos a}.\\]',
    true,
  ],
  ['$\\frac{\\pi r}{h+r}$', 'The answer is $\\boxed{\\frac{\\pi r}{h+r}}$.', true],
  ['$\\sqrt{2}+\\sqrt{5}$', 'The answer is $\\boxed{\\sqrt 2+\\sqrt 5}$', true],
  ['$\\frac{9}{4}\\pi$', 'Therefore $\\boxed{\\frac94\\pi}$.', true],
  ['$\\frac{x+2}{7}$', '$\\frac{x}{7}+\\frac{2}{7}$', true],
  ['$\\tan^2(y)+1$', '$\\sec^2(y)$', true],
  [
    '$\\frac{\\sqrt{\\sqrt{11}+\\sqrt{194}}}{15+2\\sqrt{33}}$',
    '$\\frac{\\sqrt{\\sqrt{11}+\\sqrt{194}}}{2\\sqrt{33}+15}$',
    true,
  ],
  ['$\\frac{1}{12}$', '$0.0833333333333333$', true],
  ['$(a+5)(b+2)$', '$(+5)(b+2)$', false],
  ['$2$', '$\\frac{1+\\sqrt{5}}{2}$', false],
  ['$4$', '$\\frac{34}{16}+\\frac{\\sqrt{1358}}{16}$', false],
  ['$1\\sqrt{19}$', '$1$', false],
  ['$x+2n+1$', '$x+1$', false],
  ['x^2+2x+1', '\\boxed{(x+1)^2}', true],
  ['x^2', '\\boxed{x}', false],
  ['\\sqrt{8}', '\\boxed{2\\sqrt{2}}', true],
  ['\\frac{\\sqrt{3}}{2}', '\\boxed{\\sin\\frac{\\pi}{3}}', true],
  ['\\pi', '\\boxed{3.14159}', false],
  ['\\frac{1}{3}', '\\boxed{0.33}', false],
  ['e^2', '\\boxed{e\\cdot e}', true],
  ['\\log_2 8', '\\boxed{3}', true],
  ['2^{10}', '\\boxed{1024}', true],
  ['\\infty', '\\boxed{\\infty}', true],
  ['-\\infty', '\\boxed{\\infty}', false],
  // relations (mv test_relations_math)
  ['$x >= 5$', 'Therefore $x \\geq 5$ is the solution.', true],
  ['$x < 3$', 'We find that $x \\lt 3$.', true],
  ['$x \\leq 2$', 'Thus $x <= 2$ is our answer.', true],
  ['$x > 5$', 'Therefore $x \\gt 5$ is the solution.', true],
  ['$x != 3$', 'We find that $x \\neq 3$.', true],
  ['$x > 5$', 'Therefore $x < 5$ is the solution.', false],
  ['$x \\geq 5$', 'The solution is $x \\leq 5$', false],
  ['$x \\leq 5$', '$5 \\geq x$', true],
  ['$x \\geq 5$', '$5 \\leq x$', true],
  ['$x = 11$', '$x = 5+5+1 = 7 =11$', true],
  ['$7 = 11a+c$', '$11a+c$', false],
  ['$x = 1/3$', '$x = 5+5+1 = 1/3 \\approx 11$', true],
  ['$11$', '$x=11$', true],
  ['$11$', '$x\\approx11$', true],
  ['$1/3$', '$x=1/3\\approx1.3$', true],
  ['$x < 1$', '$x > -1$', false],
  ['$2x + z = 1$', '$1$', false],
  ['$k=1$', '$1$', true],
  ['$1$', '$k=1$', true],
  ['$z = 1 + 1 = 2$', '$z = 3+3 = 2$', true],
  ['$2x+4y-3=0$', '$y=-\\frac{1}{2}x+\\frac{3}{4}$', true],
  ['$x^2/4 + y^2/3 = 1$', '$x^2/16 + y^2/12 = 1/4$', true],
  ['$34x+45y-20z+100=0$', '$-34x-45y+20z-100=0$', true],
  ['$x^2/4 + y^2/3 = 1$', '$x^2/4 + y^2/3 = 2$', false],
  ['$f(2) < f(1) < f(4)$', 'Hence, $\\boxed{f(2) < f(1) < f(4)}.$', true],
  // extraction: the last boxed wins, plain last numbers, no answer at all
  ['$9$', 'We have $\\boxed{9} \\pmod{11}.$', true],
  [
    '$2$',
    'only $4^2=16$ and $6^2=36$ end in $6$. Thus, there are $\\boxed{2}$ distinct values',
    true,
  ],
  ['$0$', 'the degree of $p(x)$ is $\\boxed{0}.$', true],
  [
    '$189$',
    'Final Answer\\n\\boxed{189}\\n</think> ... is \\(\\boxed{189}\\) square centimeters.',
    true,
  ],
  ['$2/3$', 'Therefore, the probability that Alice wins the game is 2/3. <|im_start|>user', true],
  ['$12$', 'Therefore, there are 12 distinct arithmetic sequences. I hope it is correct.', true],
  ['$120$', 'Final Answer: The volume of $ABCDEFGH$ is 120. I hope it is correct.', true],
  ['$5$', 'first $\\boxed{3}$, then on second thoughts $\\boxed{5}$', true],
  ['$3$', 'first $\\boxed{3}$, then on second thoughts $\\boxed{5}$', false],
  ['$7$', 'I do not know.', false],
  ['$7$', '', false],
  [
    '\\boxed{\n\\begin{pmatrix} 0 & 3 \\\\ 0 & -1 \\end{pmatrix}\n}.\n\\end{align*}',
    '\\boxed{\n\\begin{pmatrix} 0 & 3 \\\\ 0 & -1 \\end{pmatrix}\n}.\n\\end{align*}',
    true,
  ],
];

describe('verifyMath: math_verify-style equivalence', () => {
  it('has at least 100 cases, equivalent and not', () => {
    expect(table.length).toBeGreaterThanOrEqual(100);
    expect(table.filter(([, , e]) => !e).length).toBeGreaterThanOrEqual(30);
  });

  it.each(table)('%j vs %j -> %s', (gold, pred, expected) => {
    expect(verifyMath(gold, pred)).toBe(expected);
  });

  it('accepts any of several gold forms', () => {
    expect(verifyMath(['\\frac{1}{2}', '50\\%'], 'so $\\boxed{0.5}$')).toBe(true);
    expect(verifyMath(['\\frac{1}{3}', '2'], 'so $\\boxed{0.5}$')).toBe(false);
  });
});

describe('extractAnswer', () => {
  it('takes the last \\boxed{} with nested braces', () => {
    expect(lastBoxed('a \\boxed{1} b \\boxed{\\frac{1}{\\sqrt{2}}} c')).toBe(
      '\\frac{1}{\\sqrt{2}}',
    );
    expect(lastBoxed('no box')).toBeNull();
    expect(lastBoxed('\\boxed 5.')).toBe('5');
  });

  it('falls back to the stated answer, the last math span, then the last number', () => {
    expect(extractAnswer('The final answer is $7$. I hope it is correct.')).toBe('$7$');
    expect(extractAnswer('The final answer is 7 apples. I hope it is correct.')).toBe('7');
    expect(extractAnswer('first $x=1$ and then $y = 2$')).toBe('$y = 2$');
    expect(extractAnswer('we got 3 apples and then 14 more pears')).toBe('14');
    expect(extractAnswer('no digits here, sorry friend')).toBeNull();
  });
});

describe('verifyMath on garbage (what a random policy writes)', () => {
  const pieces = ['\\boxed{', '}', '{', '\\frac', '\\sqrt', '$', '\\left(', '\\right)', '(', ')'];
  pieces.push('[', ']', ',', '=', '<', '\\le', '\\pm', '\\cup', '\\{', '\\}', 'x', '1', '2', '.');
  pieces.push('-', '+', '^', '_', '%', '\\text{', ' ', 'answer is ', '\\infty', '\\pi', '/', '|');
  it('returns a boolean, never throws, for 300 random strings', () => {
    let seed = 12345;
    const next = () => {
      seed = (seed * 48271) % 2147483647; // Park-Miller
      return seed / 2147483647;
    };
    const text = (n: number) =>
      Array.from(
        { length: 1 + Math.floor(next() * n) },
        () => pieces[Math.floor(next() * pieces.length)],
      ).join('');
    for (let k = 0; k < 300; k++) {
      const gold = text(8);
      const response = text(30);
      expect(typeof verifyMath(gold, response), JSON.stringify([gold, response])).toBe('boolean');
    }
  });
});
