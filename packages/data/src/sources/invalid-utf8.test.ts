import { writeFileSync } from 'node:fs';
import { join } from 'node:path';
import {
  Binary,
  Field,
  List,
  Struct,
  Table,
  Utf8,
  makeBuilder,
  tableToIPC,
  vectorFromArray,
} from 'apache-arrow';
import * as pw from 'parquet-wasm/node';
import { tempDir } from '@rl2/vitest-config/temp-dir';
import { describe, expect, it } from 'vitest';
import type { DataError } from '../errors.js';
import { loadDataset } from './load-dataset.js';

const dir = tempDir('rl2-utf8-');
const MARK = Buffer.from('@@MARK@@');
/** `bytes` with every occurrence of MARK's first byte turned into 0xff: no longer UTF-8 there. */
function corrupt(bytes: Uint8Array): Buffer {
  const out = Buffer.from(bytes);
  let hits = 0;
  for (let i = out.indexOf(MARK); i >= 0; i = out.indexOf(MARK, i + 1)) {
    out[i] = 0xff;
    hits += 1;
  }
  expect(hits).toBeGreaterThan(0);
  return out;
}
const write = (name: string, bytes: Uint8Array | string) => {
  const file = join(dir, name);
  writeFileSync(file, bytes);
  return file;
};
const failure = (spec: string) =>
  loadDataset(spec).then(
    () => expect.unreachable('loaded'),
    (e: DataError) => e,
  );

describe('invalid UTF-8 in text files is an error naming file and line', () => {
  it('JSONL, JSON and CSV: the line and byte offset of the bad byte (it used to become U+FFFD silently)', async () => {
    const jsonl = write(
      'bad.jsonl',
      corrupt(
        Buffer.from(
          '{"prompt": "ok", "response": "a"}\n{"prompt": "x", "response": "b"}\n{"prompt": "@@MARK@@", "response": "c"}\n',
        ),
      ),
    );
    const e = await failure(jsonl);
    expect(e.code).toBe('INVALID_UTF8');
    expect(e.message).toContain(`${jsonl} line 3 (byte ${66 + 13}) is not valid UTF-8: bytes 0xff`);
    expect(e.message).toContain('iconv');

    const json = write(
      'bad.json',
      corrupt(Buffer.from('[\n {"prompt": "a"},\n {"prompt": "@@MARK@@"}\n]\n')),
    );
    expect((await failure(json)).message).toContain(`${json} line 3 (byte`);
    const csv = write(
      'bad.csv',
      corrupt(Buffer.from('prompt,response\r\nok,fine\r\n"multi\nline",@@MARK@@\r\n')),
    );
    expect((await failure(csv)).message).toContain(`${csv} line 4 (byte`);
  });

  it(
    'finds the line past a 1 MiB chunk, keeps characters split across chunks, and names a ' +
      'character cut by the end of the file',
    async () => {
      const euro = '€'; // 3 bytes: placed so that one straddles the 1 MiB chunk boundary
      const line = `{"t": "${'y'.repeat(1000)}${euro}"}\n`;
      const lines = Array.from({ length: 1200 }, () => line);
      const good = write('good.jsonl', lines.join(''));
      expect((await loadDataset(good)).rows.every((r) => (r.t as string).endsWith(euro))).toBe(
        true,
      );
      lines[1100] = '{"t": "@@MARK@@"}\n';
      const e = await failure(write('far.jsonl', corrupt(Buffer.from(lines.join('')))));
      expect(e.message).toMatch(/far\.jsonl line 1101 \(byte \d+\)/);
      const cut = await failure(
        write(
          'cut.jsonl',
          Buffer.concat([Buffer.from('{"t": "a"}\n{"t": "'), Buffer.from(euro).subarray(0, 2)]),
        ),
      );
      expect(cut.message).toMatch(
        /cut\.jsonl line 2 \(byte 18\) is not valid UTF-8 \(the file ends inside a character\): bytes 0xe2 0x82/,
      );
    },
  );

  it('a byte-order mark is not a character of the first key; U+FFFD written as UTF-8 stays valid', async () => {
    const file = write(
      'bom.csv',
      Buffer.concat([Buffer.from([0xef, 0xbb, 0xbf]), Buffer.from('prompt,response\n\uFFFD,r\n')]),
    );
    expect((await loadDataset(file)).rows).toEqual([{ prompt: '\uFFFD', response: 'r' }]);
  });
});

const messageType = new List(
  new Field(
    'item',
    new Struct([new Field('role', new Utf8(), true), new Field('content', new Utf8(), true)]),
    true,
  ),
);
/** Three rows; `badPrompt` / `badContent` put the marker into row 2's prompt or into row 3's second message. */
function table(where: 'prompt' | 'content'): Table {
  const messages = makeBuilder({ type: messageType, nullValues: [null, undefined] });
  const contents = [['a'], ['b', 'c'], ['d', where === 'content' ? '@@MARK@@' : 'e']];
  // the builder takes plain objects for struct values (its typing wants Vectors)
  for (const c of contents)
    messages.append(
      c.map((content, i) => ({ role: i % 2 ? 'assistant' : 'user', content })) as never,
    );
  return new Table({
    prompt: vectorFromArray(['p1', where === 'prompt' ? '@@MARK@@' : 'p2', 'p3'], new Utf8()),
    image: vectorFromArray(
      [Uint8Array.of(0xff, 0xfe), Uint8Array.of(1), Uint8Array.of(0x80)],
      new Binary(),
    ),
    messages: messages.finish().toVector(),
  });
}
function parquet(t: Table): Uint8Array {
  const props = new pw.WriterPropertiesBuilder()
    .setCompression(pw.Compression.UNCOMPRESSED)
    .setDictionaryEnabled(false)
    .build();
  return pw.writeParquet(pw.Table.fromIPCStream(tableToIPC(t, 'stream')), props);
}

describe('invalid UTF-8 in Parquet and Arrow files names the row and column', () => {
  it('Parquet: a top-level string and a string inside list<struct> (binary columns stay bytes)', async () => {
    const fine = await loadDataset(write('fine.parquet', parquet(table('prompt')).slice()));
    expect(fine.rows[1]?.prompt).toBe('@@MARK@@');
    expect(fine.rows[0]?.image).toEqual(Uint8Array.of(0xff, 0xfe));
    const top = write('top.parquet', corrupt(parquet(table('prompt'))));
    const e = await failure(top);
    expect(e.code).toBe('INVALID_UTF8');
    expect(e.message).toContain(
      `${top} row 2 column "prompt" holds a string that is not valid UTF-8`,
    );
    const nested = write('nested.parquet', corrupt(parquet(table('content'))));
    expect((await failure(nested)).message).toContain(`${nested} row 3 column "messages"`);
  });

  it('Arrow stream and file: top-level and nested strings', async () => {
    for (const format of ['stream', 'file'] as const) {
      const top = write(`top-${format}.arrow`, corrupt(tableToIPC(table('prompt'), format)));
      const e = await failure(top);
      expect(e.code).toBe('INVALID_UTF8');
      expect(e.message).toContain(`${top} row 2 column "prompt"`);
      const nested = write(`nested-${format}.arrow`, corrupt(tableToIPC(table('content'), format)));
      expect((await failure(nested)).message).toContain(`${nested} row 3 column "messages"`);
    }
  });
});

describe('a truncated Arrow file is named as such', () => {
  it('an IPC file without its footer, and a stream that ends inside a record batch', async () => {
    const whole = tableToIPC(table('prompt'), 'file');
    const file = write('cut-file.arrow', whole.subarray(0, whole.length - 40));
    const e = await failure(file);
    expect(e.code).toBe('UNREADABLE_FILE');
    expect(e.message).toBe(
      `${file} is truncated: an Arrow IPC file ends with its footer and the ARROW1 marker, this ` +
        `one does not (the file has ${whole.length - 40} bytes). Copy or download it again.`,
    );
    expect(e.message).not.toContain('Cannot read properties');
    const stream = tableToIPC(table('prompt'), 'stream');
    const cut = write('cut-stream.arrow', stream.subarray(0, stream.length - 30));
    expect((await failure(cut)).message).toMatch(
      /cut-stream\.arrow is truncated: it ends inside a record batch \(\d+ bytes expected, \d+ left\)/,
    );
  });
});

describe('a malformed row says how to skip it', () => {
  it("loadDataset names onBadRow, a caller's own hint replaces it", async () => {
    const file = write('rows.jsonl', '{"a": 1}\n{"a": \n');
    expect((await failure(file)).message).toBe(
      `${file} line 2 is not valid JSON Lines (Unexpected end of JSON input). Fix or remove ` +
        `that line. Or load with onBadRow: 'skip' to count and skip such rows.`,
    );
    const e = await loadDataset(file, { badRowHint: 'Or set data.on_bad_row=skip.' }).catch(
      (x: DataError) => x,
    );
    expect((e as DataError).message).toMatch(
      /Fix or remove that line\. Or set data\.on_bad_row=skip\.$/,
    );
  });
});
