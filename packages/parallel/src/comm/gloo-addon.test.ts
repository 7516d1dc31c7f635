import { existsSync } from 'node:fs';
import { describe, expect, it } from 'vitest';
import { loadGlooAddon } from './gloo-addon.js';

describe('loadGlooAddon', () => {
  it('without the addon, says how to build it with what this package ships (no pnpm command of the repository)', () => {
    const r = loadGlooAddon({ RL2_GLOO_ADDON: '/nonexistent/rl2_gloo.node' });
    expect(r.ok).toBe(false);
    const reason = (r as { reason: string }).reason;
    expect(reason).toContain('/nonexistent/rl2_gloo.node not found');
    expect(reason).toContain('install libgloo-dev and g++');
    const script = /`node (\S+parallel-build-native\.mjs)`/.exec(reason)?.[1];
    expect(script, reason).toBeDefined();
    expect(existsSync(script as string)).toBe(true);
    expect(reason).not.toContain('pnpm --filter');
  });
});
