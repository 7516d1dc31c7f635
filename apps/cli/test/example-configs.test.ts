import { readdirSync, readFileSync } from 'node:fs';
import { join, resolve } from 'node:path';
import {
  dpoConfigSchema,
  loadConfig,
  ppoConfigSchema,
  rmConfigSchema,
  sftConfigSchema,
} from '@rl2/trainers';
import { describe, expect, it } from 'vitest';

const root = resolve(import.meta.dirname, '..', '..', '..');
const schemas = {
  sft: sftConfigSchema,
  rm: rmConfigSchema,
  dpo: dpoConfigSchema,
  ppo: ppoConfigSchema,
};

/** Every examples/<name>/*.yaml whose header says `cli.js <command> --config <that file>`, with the command. */
function exampleConfigs(): Array<{ file: string; command: keyof typeof schemas }> {
  const examples = join(root, 'examples');
  return readdirSync(examples, { withFileTypes: true })
    .filter((d) => d.isDirectory())
    .flatMap((d) =>
      readdirSync(join(examples, d.name))
        .filter((f) => f.endsWith('.yaml'))
        .map((f) => `examples/${d.name}/${f}`),
    )
    .flatMap((file) => {
      const m = /\/cli\.js (sft|rm|dpo|ppo) --config (\S+)/.exec(
        readFileSync(join(root, file), 'utf8'),
      );
      return m && m[2] === file ? [{ file, command: m[1] as keyof typeof schemas }] : [];
    });
}

describe('the example configs', () => {
  const configs = exampleConfigs();

  it('are found: each names the rl2 command that runs it', () => {
    expect(configs.map((c) => c.file)).toContain('examples/rl-demo/grpo-lora.yaml');
    expect(configs.length).toBeGreaterThanOrEqual(14);
  });

  it.each(configs)(
    '$file loads as an `rl2 $command` config (keys and values valid)',
    ({ file, command }) => {
      expect(() => loadConfig(schemas[command], { configFile: join(root, file) })).not.toThrow();
    },
  );

  it('grpo-lora.yaml is the LoRA+ run the rl-demo README measures: B at 4x lr, two passes', () => {
    const c = loadConfig(ppoConfigSchema, {
      configFile: join(root, 'examples/rl-demo/grpo-lora.yaml'),
    });
    expect(c.actor.lora).toMatchObject({ rank: 16, alpha: 32, lr_ratio: 4 });
    expect(c.actor.lr).toBe(6e-4);
    expect(c.trainer).toMatchObject({ n_epochs: 2, max_steps: 256 });
  });
});
