import {
  existsSync,
  mkdirSync,
  readdirSync,
  readFileSync,
  symlinkSync,
  writeFileSync,
} from 'node:fs';
import { tmpdir } from 'node:os';
import { basename, join } from 'node:path';
import { tempDir } from '@rl2/vitest-config/temp-dir';
import { describe, expect, it } from 'vitest';
import { removeStaleSaves, tempPathBeside } from './atomic-dir.js';

const GONE = 999_999_999; // a pid no process has

describe('removeStaleSaves', () => {
  it('removes what killed saves left in a run folder, recovers a folder killed between renames, keeps the rest', () => {
    const run = tempDir('rl2-stale-');
    mkdirSync(join(run, 'step-2'));
    mkdirSync(join(run, `.tmp-${GONE}-1700000000000-step-3`)); // a step save killed while it wrote
    writeFileSync(join(run, `.tmp-${GONE}-1700000000000-step-3`, 'optimizer.safetensors'), 'half');
    symlinkSync('step-2', join(run, `.tmp-${GONE}-1700000000001-latest`)); // the `latest` link, killed before its rename
    writeFileSync(join(run, `.tmp-${GONE}-1700000000002-report.html`), '<html'); // a file written through a temp file
    mkdirSync(join(run, `.old-${GONE}-1700000000003-step-4`)); // step-4 replaced, killed between the renames
    writeFileSync(join(run, `.old-${GONE}-1700000000003-step-4`, 'trainer_state.json'), '{}');
    mkdirSync(join(run, `.tmp-${process.ppid}-1700000000004-step-5`)); // a live process saving into the same folder
    for (const mine of ['notes.tmp', '.tmp-draft', 'metrics.jsonl'])
      writeFileSync(join(run, mine), 'user file');

    const removed = removeStaleSaves(run);

    expect(removed.sort()).toEqual([
      `.tmp-${GONE}-1700000000000-step-3`,
      `.tmp-${GONE}-1700000000001-latest`,
      `.tmp-${GONE}-1700000000002-report.html`,
    ]);
    expect(readdirSync(run).sort()).toEqual([
      `.tmp-${process.ppid}-1700000000004-step-5`,
      '.tmp-draft',
      'metrics.jsonl',
      'notes.tmp',
      'step-2',
      'step-4',
    ]);
    expect(readFileSync(join(run, 'step-4', 'trainer_state.json'), 'utf8')).toBe('{}');
    expect(existsSync(join(run, 'step-2')), 'the link target is untouched').toBe(true);
    expect(removeStaleSaves(join(run, 'missing'))).toEqual([]);
  });

  it('temp files are named like work folders, so a kill leaves nothing it cannot find', () => {
    const path = join(tmpdir(), 'run', 'trainer_state.json');
    expect(basename(tempPathBeside(path))).toMatch(
      new RegExp(`^\\.tmp-${process.pid}-\\d+-trainer_state\\.json$`),
    );
  });
});
