// Shared vitest configuration for every rl2 package.
// Tests run on source: `@rl2/<name>` resolves to packages/<name>/src/index.ts (apps/cli for
// `@rl2/cli`) and a subpath export `@rl2/<name>/<sub>` to src/<sub>/index.ts, so `pnpm test`
// needs no build. Each run writes .vitest/results.json, which
// tooling/scripts/test-summary.mjs adds up into the `N passed, N failed` line CI reads, and
// fails if its tests leave `rl2-*` folders in the temp directory (temp-guard.js; tests make
// theirs with tempDir() from temp-dir.js, removed after each file).
import { existsSync } from 'node:fs';
import { dirname, join, resolve } from 'node:path';
import { fileURLToPath } from 'node:url';

const here = dirname(fileURLToPath(import.meta.url));
const root = resolve(here, '..', '..');

function sourceOf(name, sub = '') {
  for (const dir of [join(root, 'packages', name), join(root, 'apps', name)]) {
    const entry = join(dir, 'src', sub, 'index.ts');
    if (existsSync(entry)) return entry;
  }
  return undefined;
}

/** Vite plugin resolving `@rl2/<name>` to that package's src/index.ts (`@rl2/<name>/<sub>`: src/<sub>/index.ts). */
export function sourcePlugin() {
  return {
    name: 'rl2-source',
    enforce: 'pre',
    resolveId(id) {
      const m = /^@rl2\/([a-z0-9-]+)(?:\/([a-z0-9-]+))?$/.exec(id);
      return m ? sourceOf(m[1], m[2]) : undefined;
    },
  };
}

/**
 * vitest config for the package in `dir`.
 * @param {string} dir package directory (import.meta.dirname)
 * @param {object} [overrides] merged into `test`
 */
export function packageConfig(dir, overrides = {}) {
  return {
    plugins: [sourcePlugin()],
    test: {
      root: dir,
      include: ['src/**/*.test.ts', 'test/**/*.test.ts'],
      exclude: ['**/node_modules/**', '**/dist/**'],
      passWithNoTests: true,
      testTimeout: 120_000,
      hookTimeout: 120_000,
      pool: 'forks',
      reporters: ['default', 'json'],
      outputFile: { json: join(dir, '.vitest', 'results.json') },
      globalSetup: [join(here, 'temp-guard.js')],
      setupFiles: [join(here, 'temp-dir-setup.js')],
      ...overrides,
    },
  };
}
