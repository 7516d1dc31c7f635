// examples/addition/README.md's "Run it" block, checked as a chain: every command is an rl2
// command of this CLI, every --config exists, and every model a config starts from is written
// by an earlier command of the block (issue 26: it began with `pnpm main`, which runs another
// example, so the next command found no model).
import { existsSync, readFileSync } from 'node:fs';
import { join, resolve } from 'node:path';
import { describe, expect, it } from 'vitest';
import { parse } from 'yaml';

const root = resolve(import.meta.dirname, '../../..');
const readme = readFileSync(join(root, 'examples/addition/README.md'), 'utf8');
const block = /## Run it[\s\S]*?```bash\n([\s\S]*?)\n```/.exec(readme)?.[1] ?? '';
const commands = block
  .replace(/\\\n\s*/g, ' ')
  .split('\n')
  .map((l) => l.replace(/#.*$/, '').trim())
  .filter(Boolean)
  .map((l) => l.split(/\s+/));

/** The model folders a trainer config starts from, and the folder it saves to. */
function runOf(configPath: string) {
  const cfg = parse(readFileSync(join(root, configPath), 'utf8')) as {
    actor?: { model_name?: string };
    critic?: { model_name?: string };
    trainer: { experiment_name: string; save_dir: string };
  };
  const saveDir = cfg.trainer.save_dir.replace(
    '${trainer.experiment_name}',
    cfg.trainer.experiment_name,
  );
  const models = [cfg.actor?.model_name, cfg.critic?.model_name].filter(
    (m): m is string => typeof m === 'string',
  );
  return { models, saveDir };
}

describe('examples/addition/README.md', () => {
  it('runs a chain in which each command finds what the earlier ones wrote', () => {
    expect(commands.length).toBeGreaterThan(0);
    const written = new Set<string>();
    for (const [program, script, sub, ...args] of commands) {
      const line = [program, script, sub, ...args].join(' ');
      expect(`${program} ${script}`, line).toBe('node apps/cli/dist/cli.js');
      const flag = (name: string) => args[args.indexOf(name) + 1] as string;
      if (sub === 'init-model') {
        written.add(flag('--out'));
      } else if (sub === 'report') {
        expect(written, `${line}: no earlier command wrote ${args[0]}`).toContain(args[0]);
      } else {
        const config = flag('--config');
        expect(existsSync(join(root, config)), `${line}: ${config} does not exist`).toBe(true);
        const { models, saveDir } = runOf(config);
        for (const m of models) expect(written, `${line}: nothing earlier wrote ${m}`).toContain(m);
        written.add(saveDir).add(`${saveDir}/latest/model`);
      }
    }
  });
});
