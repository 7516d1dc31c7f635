import { writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { tempDir } from '@rl2/vitest-config/temp-dir';
import { describe, expect, it } from 'vitest';
import { DataError } from '../errors.js';
import { readCsv } from './read-csv.js';
import { readJson } from './read-json.js';
import { readJsonl } from './read-jsonl.js';
import { emptyStats } from './row.js';
import type { RowWithOrigin } from './row-with-origin.js';

const fx = (name: string) => join(import.meta.dirname, '../../test/fixtures', name);
async function all(gen: AsyncGenerator<RowWithOrigin[]>): Promise<RowWithOrigin[]> {
  const out: RowWithOrigin[] = [];
  for await (const batch of gen) out.push(...batch);
  return out;
}

describe('readJsonl', () => {
  it('reads objects, skips blank lines, keeps line numbers', async () => {
    const rows = await all(readJsonl(fx('sft.jsonl'), emptyStats()));
    expect(rows.map((r) => r.row)).toEqual([
      { prompt: 'p1', response: 'r1' },
      { prompt: 'p2', response: 'r2' },
    ]);
    expect(rows.map((r) => r.origin.row)).toEqual([1, 3]);
  });
  it('names file and line of a malformed line', async () => {
    const err = await all(readJsonl(fx('bad.jsonl'), emptyStats())).catch((e: unknown) => e);
    expect(err).toBeInstanceOf(DataError);
    expect((err as DataError).code).toBe('MALFORMED_ROW');
    expect((err as DataError).message).toContain('bad.jsonl line 2');
  });
  it("counts and skips with onBadRow 'skip'", async () => {
    const stats = emptyStats();
    const rows = await all(readJsonl(fx('bad.jsonl'), stats, 'skip'));
    expect(rows.map((r) => r.row.prompt)).toEqual(['p1', 'p3']);
    expect(stats.rowsSkipped).toBe(1);
    expect(stats.skipped[0]?.row).toBe(2);
  });
  it('splits CRLF lines across 1 MiB chunk boundaries', async () => {
    const dir = tempDir('rl2-jsonl-');
    const lines = Array.from({ length: 3000 }, (_, i) =>
      JSON.stringify({ i, t: 'y'.repeat(500 + (i % 5)) }),
    );
    writeFileSync(join(dir, 'big.jsonl'), lines.join('\r\n'));
    const rows = await all(readJsonl(join(dir, 'big.jsonl'), emptyStats()));
    expect(rows.length).toBe(3000);
    expect(
      rows.every(
        (r, i) =>
          r.row.i === i && r.origin.row === i + 1 && (r.row.t as string).length === 500 + (i % 5),
      ),
    ).toBe(true);
  });
  it('reports a missing file as FILE_NOT_FOUND', async () => {
    const err = await all(readJsonl(fx('nope.jsonl'), emptyStats())).catch((e: unknown) => e);
    expect((err as DataError).code).toBe('FILE_NOT_FOUND');
    expect((err as DataError).message).toContain('nope.jsonl');
  });
});

describe('readJson', () => {
  it('streams a top-level array with brackets and quotes inside strings', async () => {
    const rows = await all(readJson(fx('sft-array.json'), emptyStats()));
    expect(rows[0]?.row).toEqual({ prompt: 'a, [b] {c}', response: 'r"1"]' });
    expect(rows[1]?.row.messages).toEqual([
      { role: 'user', content: 'hi' },
      { role: 'assistant', content: 'yo' },
    ]);
  });
  it('splits elements across chunk boundaries (1 MiB chunks)', async () => {
    const dir = tempDir('rl2-json-');
    const big = Array.from({ length: 3000 }, (_, i) => ({
      i,
      text: 'x'.repeat(500 + (i % 7)),
      esc: i % 3 ? `q"\\]}{[${i}` : 'plain',
    }));
    writeFileSync(join(dir, 'big.json'), JSON.stringify(big, null, 1));
    const rows = await all(readJson(join(dir, 'big.json'), emptyStats()));
    expect(rows.length).toBe(3000);
    expect(rows.map((r) => r.row)).toEqual(big);
  });
  it('reads JSON Lines saved as .json', async () => {
    const dir = tempDir('rl2-json-');
    writeFileSync(join(dir, 'l.json'), '{"a":1}\n{"a":2}\n');
    expect((await all(readJson(join(dir, 'l.json'), emptyStats()))).map((r) => r.row.a)).toEqual([
      1, 2,
    ]);
  });
  it('rejects a truncated array and a non-object element', async () => {
    const dir = tempDir('rl2-json-');
    writeFileSync(join(dir, 't.json'), '[{"a":1},');
    writeFileSync(join(dir, 'n.json'), '[{"a":1}, 3]');
    expect(
      ((await all(readJson(join(dir, 't.json'), emptyStats())).catch((e) => e)) as DataError).code,
    ).toBe('MALFORMED_ROW');
    const e = (await all(readJson(join(dir, 'n.json'), emptyStats())).catch((x) => x)) as DataError;
    expect(e.message).toContain('element 2');
  });
});

describe('readCsv', () => {
  it('handles quotes, embedded commas/newlines, doubled quotes and CRLF', async () => {
    const rows = await all(readCsv(fx('sft.csv'), emptyStats()));
    expect(rows.map((r) => r.row)).toEqual([
      { prompt: 'hello, world', response: 'multi\nline "quoted"' },
      { prompt: 'plain', response: 'text' },
    ]);
    expect(rows.map((r) => r.origin.row)).toEqual([2, 4]);
  });
  it('names the line of a record with the wrong field count', async () => {
    const dir = tempDir('rl2-csv-');
    writeFileSync(join(dir, 'b.csv'), 'a,b\n1,2\n3\n');
    const e = (await all(readCsv(join(dir, 'b.csv'), emptyStats())).catch((x) => x)) as DataError;
    expect(e.code).toBe('MALFORMED_ROW');
    expect(e.message).toContain('b.csv line 3');
  });
  it('treats a last record without a newline like any other (row kept, or a bad one named / skipped)', async () => {
    const dir = tempDir('rl2-csv-');
    writeFileSync(join(dir, 'ok.csv'), 'a,b\n1,2\n3,4');
    expect((await all(readCsv(join(dir, 'ok.csv'), emptyStats()))).map((r) => r.row)).toEqual([
      { a: '1', b: '2' },
      { a: '3', b: '4' },
    ]);
    writeFileSync(join(dir, 'bad.csv'), 'a,b\n1,2\n3');
    const e = (await all(readCsv(join(dir, 'bad.csv'), emptyStats())).catch((x) => x)) as DataError;
    expect(e.message).toMatch(/bad\.csv line 3: 1 fields where the header has 2/);
    const stats = emptyStats();
    expect((await all(readCsv(join(dir, 'bad.csv'), stats, 'skip'))).map((r) => r.row)).toEqual([
      { a: '1', b: '2' },
    ]);
    expect(stats.rowsSkipped).toBe(1);
    expect(stats.skipped[0]).toMatchObject({ row: 3 });
  });
  it('reports an empty file as EMPTY_DATASET', async () => {
    const dir = tempDir('rl2-csv-');
    writeFileSync(join(dir, 'e.csv'), '');
    expect(
      ((await all(readCsv(join(dir, 'e.csv'), emptyStats())).catch((x) => x)) as DataError).code,
    ).toBe('EMPTY_DATASET');
  });
});
