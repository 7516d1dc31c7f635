/**
 * Writes the tiny Parquet and Arrow fixtures under test/fixtures/columnar/ (run:
 * `npx tsx packages/data/scripts/make_columnar_fixtures.ts` from the repo root).
 * pyarrow is not installable here, so Arrow IPC is written with apache-arrow and Parquet with
 * parquet-wasm (arrow-rs compiled to wasm: an implementation independent of hyparquet, the
 * reader under test). The same rows go into every file; tests compare against ROWS.
 */
import { mkdirSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import {
  Field,
  Float64,
  Int64,
  List,
  Struct,
  Utf8,
  makeBuilder,
  tableToIPC,
  Table,
  vectorFromArray,
} from 'apache-arrow';
import * as pw from 'parquet-wasm/node';
import { FIXTURE_ROWS } from '../test/fixture-rows.js';

const out = join(import.meta.dirname, '..', 'test', 'fixtures', 'columnar');
mkdirSync(out, { recursive: true });

const messageType = new List(
  new Field(
    'item',
    new Struct([new Field('role', new Utf8(), true), new Field('content', new Utf8(), true)]),
    true,
  ),
);

/** An Arrow table of `rows` with datasets-like types (string, int64, float64, list<struct<role, content>>). */
export function fixtureTable(rows: typeof FIXTURE_ROWS): Table {
  const messages = makeBuilder({ type: messageType, nullValues: [null, undefined] });
  for (const r of rows) messages.append(r.messages);
  return new Table({
    id: vectorFromArray(
      rows.map((r) => BigInt(r.id)),
      new Int64(),
    ),
    prompt: vectorFromArray(
      rows.map((r) => r.prompt),
      new Utf8(),
    ),
    response: vectorFromArray(
      rows.map((r) => r.response),
      new Utf8(),
    ),
    score: vectorFromArray(
      rows.map((r) => r.score),
      new Float64(),
    ),
    messages: messages.finish().toVector(),
  });
}

const table = fixtureTable(FIXTURE_ROWS);
const features = {
  id: { dtype: 'int64', _type: 'Value' },
  prompt: { dtype: 'string', _type: 'Value' },
};
table.schema.metadata.set('huggingface', JSON.stringify({ info: { features } }));

// Arrow IPC stream, laid out like `datasets.Dataset.save_to_disk` (data-*.arrow + state.json + dataset_info.json).
const saved = join(out, 'saved');
mkdirSync(saved, { recursive: true });
writeFileSync(join(saved, 'data-00000-of-00001.arrow'), tableToIPC(table, 'stream'));
writeFileSync(
  join(saved, 'state.json'),
  JSON.stringify(
    {
      _data_files: [{ filename: 'data-00000-of-00001.arrow' }],
      _fingerprint: 'fixture',
      _split: 'train',
    },
    null,
    2,
  ),
);
writeFileSync(join(saved, 'dataset_info.json'), JSON.stringify({ features }, null, 2));
// A DatasetDict: dataset_dict.json + one folder per split.
const dict = join(out, 'dict');
for (const split of ['train', 'test']) {
  const dir = join(dict, split);
  mkdirSync(dir, { recursive: true });
  const part = fixtureTable(split === 'train' ? FIXTURE_ROWS.slice(0, 3) : FIXTURE_ROWS.slice(3));
  writeFileSync(join(dir, 'data-00000-of-00001.arrow'), tableToIPC(part, 'stream'));
  writeFileSync(
    join(dir, 'state.json'),
    JSON.stringify(
      { _data_files: [{ filename: 'data-00000-of-00001.arrow' }], _split: split },
      null,
      2,
    ),
  );
}
writeFileSync(join(dict, 'dataset_dict.json'), JSON.stringify({ splits: ['train', 'test'] }));
// Arrow IPC file format (magic ARROW1), several record batches.
const batched = new Table([
  ...fixtureTable(FIXTURE_ROWS.slice(0, 2)).batches,
  ...fixtureTable(FIXTURE_ROWS.slice(2)).batches,
]);
writeFileSync(join(out, 'rows.file.arrow'), tableToIPC(batched, 'file'));

// Parquet, one file per codec, two row groups each.
for (const [name, codec] of [
  ['snappy', pw.Compression.SNAPPY],
  ['zstd', pw.Compression.ZSTD],
  ['gzip', pw.Compression.GZIP],
] as const) {
  const props = new pw.WriterPropertiesBuilder()
    .setCompression(codec)
    .setMaxRowGroupSize(3)
    .build();
  writeFileSync(
    join(out, `rows.${name}.parquet`),
    pw.writeParquet(pw.Table.fromIPCStream(tableToIPC(table, 'stream')), props),
  );
}
console.log(`wrote fixtures to ${out}`);
