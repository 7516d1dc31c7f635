// The README's example prints what the README says it prints (issue 26: it had drifted).
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { pathToFileURL } from 'node:url';
import { format } from 'node:util';
import { expect, it, vi } from 'vitest';

const readme = readFileSync(join(import.meta.dirname, '..', 'README.md'), 'utf8');
const example = /## Example\n\n```ts\n([\s\S]*?)\n```/.exec(readme)?.[1];
const documented = /\nOutput[^\n]*:\n\n```\n([\s\S]*?)\n```/.exec(readme)?.[1];

it('the Example section prints its documented Output', async () => {
  expect(example, 'README.md has a ## Example ```ts block').toBeDefined();
  expect(documented, 'README.md has an Output block').toBeDefined();
  const dir = mkdtempSync(join(tmpdir(), 'rl2-readme-'));
  // beside this test, so that its imports resolve as the package's own (to source)
  const file = join(import.meta.dirname, `readme-example-${process.pid}.tmp.ts`);
  const lines: string[] = [];
  // console.log, and console.info for the engine's line, in the order printed
  const spies = (['log', 'info'] as const).map((level) =>
    vi.spyOn(console, level).mockImplementation((...a) => {
      lines.push(format(...a));
    }),
  );
  try {
    writeFileSync(file, (example as string).replaceAll('/tmp/tiny-qwen3', join(dir, 'model')));
    await import(pathToFileURL(file).href);
  } finally {
    for (const spy of spies) spy.mockRestore();
    rmSync(file, { force: true });
    rmSync(dir, { recursive: true, force: true });
  }
  expect(lines.join('\n').split('\n')).toEqual((documented as string).split('\n'));
});
