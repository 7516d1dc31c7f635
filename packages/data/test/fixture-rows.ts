/** The rows written into every Parquet/Arrow fixture by scripts/make_columnar_fixtures.ts. */
export const FIXTURE_ROWS = [
  {
    id: 1,
    prompt: 'What is 2+2?',
    response: '4',
    score: 0.5,
    messages: [
      { role: 'user', content: 'What is 2+2?' },
      { role: 'assistant', content: '4' },
    ],
  },
  {
    id: 2,
    prompt: 'Capital of France?',
    response: 'Paris',
    score: 1.25,
    messages: [
      { role: 'user', content: 'Capital of France?' },
      { role: 'assistant', content: 'Paris' },
    ],
  },
  {
    id: 9007199254740991,
    prompt: 'Résumé ✓',
    response: 'naïve 中文',
    score: -3,
    messages: [
      { role: 'system', content: 'Be brief.' },
      { role: 'user', content: 'Hi' },
      { role: 'assistant', content: 'Hello' },
    ],
  },
  {
    id: 4,
    prompt: '',
    response: 'empty prompt',
    score: 0,
    messages: [
      { role: 'user', content: 'x' },
      { role: 'assistant', content: 'y' },
    ],
  },
  {
    id: 5,
    prompt: 'line\nbreak, "quotes"',
    response: 'ok',
    score: 2.5,
    messages: [
      { role: 'user', content: 'a' },
      { role: 'assistant', content: 'b' },
    ],
  },
];
