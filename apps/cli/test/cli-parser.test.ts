import { rmSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { parse } from 'yaml';
import { rl2, tmp } from './helpers.js';

// One parser path for every trainer: sft, rm, dpo and ppo read --config, --dry-run and key=value alike.
const dir = tmp('parser');
afterAll(() => rmSync(dir, { recursive: true, force: true }));

const REQUIRED = {
  sft: ['actor.model_name=m', 'data.train.path=t.jsonl'],
  rm: ['critic.model_name=m', 'data.train.path=t.jsonl'],
  dpo: ['actor.model_name=m', 'data.train.path=t.jsonl'],
  ppo: ['actor.model_name=m', 'data.train.path=t.jsonl', 'rollout.env_path=env.mjs'],
} as const;
const TRAINERS = Object.keys(REQUIRED) as (keyof typeof REQUIRED)[];

function configFile(name: string, text: string): string {
  const file = join(dir, name);
  writeFileSync(file, text);
  return file;
}

const dryRun = async (argv: string[]) => {
  const r = await rl2(argv);
  expect(r.code, r.stderr).toBe(0);
  return parse(r.stdout) as { trainer: { max_steps: number | null; n_epochs: number } };
};

describe('rl2 <trainer> --config F --dry-run key=value', () => {
  it.each(TRAINERS)('%s keeps the override that follows --dry-run', async (name) => {
    const file = configFile(`${name}.yaml`, 'trainer:\n  max_steps: 30\n');
    const config = await dryRun([
      name,
      '--config',
      file,
      '--dry-run',
      'trainer.max_steps=3',
      ...REQUIRED[name],
    ]);
    expect(config.trainer.max_steps).toBe(3);
  });

  it.each(TRAINERS)('%s takes the key=value arguments after -- as overrides', async (name) => {
    const config = await dryRun([
      name,
      '--dry-run',
      ...REQUIRED[name],
      '--',
      'trainer.max_steps=4',
    ]);
    expect(config.trainer.max_steps).toBe(4);
  });

  it('an argument after -- that is not key=value fails naming it', async () => {
    const r = await rl2(['ppo', '--dry-run', ...REQUIRED.ppo, '--', '--lr']);
    expect(r.code).toBe(1);
    expect(r.stderr).toContain('command-line argument "--lr" is not key=value');
  });

  it.each(TRAINERS)(
    '%s merges --config a.yaml --config b.yaml in order, later wins',
    async (name) => {
      const a = configFile('a.yaml', 'trainer:\n  max_steps: 5\n  n_epochs: 7\n');
      const b = configFile('b.yaml', 'trainer:\n  max_steps: 6\n');
      const config = await dryRun([
        name,
        '--config',
        a,
        '--config',
        b,
        '--dry-run',
        ...REQUIRED[name],
      ]);
      expect(config.trainer).toMatchObject({ max_steps: 6, n_epochs: 7 });
      const flipped = await dryRun([
        name,
        '--config',
        b,
        '--config',
        a,
        '--dry-run',
        ...REQUIRED[name],
      ]);
      expect(flipped.trainer.max_steps).toBe(5);
    },
  );

  it('a bad value from the second --config file names that file', async () => {
    const a = configFile('ok.yaml', 'trainer:\n  max_steps: 5\n');
    const b = configFile('bad.yaml', 'trainer:\n  max_steps: -2\n');
    const r = await rl2(['sft', '--config', a, '--config', b, ...REQUIRED.sft]);
    expect(r.code).toBe(1);
    expect(r.stderr).toContain(`trainer.max_steps`);
    expect(r.stderr).toContain(`from ${b}`);
  });
});

describe('flags rl2 does not have', () => {
  it.each([
    [
      ['sft', '--lr', '1e-5'],
      'rl2: unknown option --lr; config keys are set as key=value: actor.lr=1e-5',
    ],
    [
      ['sft', '--model_name_or_path', 'Qwen/Qwen3-0.6B'],
      'rl2: unknown option --model_name_or_path; config keys are set as key=value: actor.model_name=Qwen/Qwen3-0.6B',
    ],
    [['rm', '--lr'], 'rl2: unknown option --lr; config keys are set as key=value: critic.lr=...'],
    [
      ['ppo', '--max-steps=3'],
      'rl2: unknown option --max-steps; config keys are set as key=value: trainer.max_steps=3',
    ],
  ])('%j prints one line naming the flag and the key=value form', async (argv, line) => {
    const r = await rl2(argv);
    expect(r.code).toBe(1);
    expect(r.stderr).toBe(`${line} (rl2 ${argv[0]} --help lists every key)\n`);
  });

  it('a short flag is named as written', async () => {
    const r = await rl2(['dpo', '-c', 'x.yaml']);
    expect(r.code).toBe(1);
    expect(r.stderr).toBe(
      'rl2: unknown option -c; config keys are set as key=value: e.g. trainer.max_steps=10 (rl2 dpo --help lists every key)\n',
    );
    const near = await rl2(['sft', '--n-epoch', '2']);
    expect(near.stderr).toContain(
      'unknown option --n-epoch; config keys are set as key=value: trainer.n_epochs=2',
    );
  });

  it('an unknown flag of a tool command names the flag and its --help', async () => {
    const r = await rl2(['init-model', '--out', join(dir, 'm'), '--hiden-size', '8']);
    expect(r.code).toBe(1);
    expect(r.stderr).toBe(
      'rl2: unknown option --hiden-size (rl2 init-model --help lists the options)\n',
    );
  });
});

describe('--version', () => {
  it.each([[['--version']], [['sft', '--version']], [['ppo', '-v']]])(
    'rl2 %j prints the version and validates nothing',
    async (argv) => {
      const r = await rl2(argv);
      expect(r.code, r.stderr).toBe(0);
      expect(r.stdout).toMatch(/^rl2\/\d+\.\d+\.\d+/);
      expect(r.stderr).toBe('');
    },
  );
});
