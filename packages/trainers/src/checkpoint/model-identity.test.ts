import { mkdirSync, mkdtempSync, realpathSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { STARTED_FROM_KEY, checkResumedModel, modelIdentity } from './model-identity.js';

const root = realpathSync(mkdtempSync(join(tmpdir(), 'rl2-identity-')));
afterAll(() => rmSync(root, { recursive: true, force: true }));

const SHAPE = { model_type: 'qwen3', hidden_size: 16, num_hidden_layers: 1, vocab_size: 99 };
function folder(name: string, config: Record<string, unknown>): string {
  const dir = join(root, name);
  mkdirSync(dir, { recursive: true });
  writeFileSync(join(dir, 'config.json'), JSON.stringify(config));
  return dir;
}
const message = (fn: () => void) => {
  try {
    fn();
  } catch (err) {
    return (err as Error).message;
  }
  return undefined;
};

describe('checkResumedModel', () => {
  const base = folder('base', SHAPE);
  const saved = folder('ckpt/model', { ...SHAPE, [STARTED_FROM_KEY]: modelIdentity(base) });

  it('passes for the model the checkpoint started from, however its path is written', () => {
    expect(message(() => checkResumedModel(saved, base, 'actor.model_name'))).toBeUndefined();
    expect(
      message(() => checkResumedModel(saved, join(base, '..', 'base', '.'), 'actor.model_name')),
    ).toBeUndefined();
  });

  it('fails for a model of the same shape under another name (another seed), naming both and the key', () => {
    const other = folder('seed-1', SHAPE);
    expect(message(() => checkResumedModel(saved, other, 'critic.model_name'))).toBe(
      `trainer.load_ckpt_from: the checkpoint ${saved} was trained from critic.model_name=${base}, ` +
        `but critic.model_name=${other}. To resume that run set critic.model_name=${base}; ` +
        `to train ${other}, start a new run with another trainer.save_dir (or trainer.load_ckpt_from=null)`,
    );
  });

  it('names the shape keys that differ', () => {
    const wide = folder('wide', { ...SHAPE, hidden_size: 32, num_hidden_layers: 2 });
    expect(message(() => checkResumedModel(saved, wide, 'actor.model_name'))).toContain(
      '(hidden_size 16 in the checkpoint, 32 requested; num_hidden_layers 1 in the checkpoint, 2 requested)',
    );
  });

  it('a checkpoint without a record (older rl2) is checked by shape alone', () => {
    const old = folder('old-ckpt/model', SHAPE);
    expect(
      message(() => checkResumedModel(old, folder('same', SHAPE), 'actor.model_name')),
    ).toBeUndefined();
    expect(
      message(() =>
        checkResumedModel(
          old,
          folder('other-vocab', { ...SHAPE, vocab_size: 151936 }),
          'actor.model_name',
        ),
      ),
    ).toContain(`the checkpoint ${old} holds another model, but actor.model_name=`);
  });

  it('a recorded folder that is gone (moved) is not held against the resume; a hub id is', () => {
    const moved = folder('moved-ckpt/model', { ...SHAPE, [STARTED_FROM_KEY]: join(root, 'gone') });
    expect(message(() => checkResumedModel(moved, base, 'actor.model_name'))).toBeUndefined();
    const hub = folder('hub-ckpt/model', { ...SHAPE, [STARTED_FROM_KEY]: 'Qwen/Qwen3-0.6B' });
    expect(
      message(() => checkResumedModel(hub, 'Qwen/Qwen3-0.6B', 'actor.model_name')),
    ).toBeUndefined();
    expect(message(() => checkResumedModel(hub, 'Qwen/Qwen3-1.7B', 'actor.model_name'))).toContain(
      'was trained from actor.model_name=Qwen/Qwen3-0.6B, but actor.model_name=Qwen/Qwen3-1.7B',
    );
  });
});
