import { readdirSync, readFileSync, readlinkSync, symlinkSync } from 'node:fs';
import { join } from 'node:path';
import { tempDir } from '@rl2/vitest-config/temp-dir';
import { describe, expect, it } from 'vitest';
import { updateLink, writeFileAtomic } from './atomic-write.js';

describe('writeFileAtomic and updateLink', () => {
  it('replace a file and a link whole, leaving no work file beside them', () => {
    const run = tempDir('rl2-atomic-write-');
    writeFileAtomic(join(run, 'state', 'trainer_state.json'), '{"step": 1}');
    writeFileAtomic(join(run, 'state', 'trainer_state.json'), '{"step": 2}');
    expect(readFileSync(join(run, 'state', 'trainer_state.json'), 'utf8')).toBe('{"step": 2}');
    symlinkSync('step-1', join(run, 'latest'));
    updateLink(run, 'latest', 'step-2');
    expect(readlinkSync(join(run, 'latest'))).toBe('step-2');
    expect(readdirSync(run).sort()).toEqual(['latest', 'state']);
    expect(readdirSync(join(run, 'state'))).toEqual(['trainer_state.json']);
  });
});
