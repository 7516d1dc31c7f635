// Shared tsup options: every rl2 package ships ESM + .d.ts with source maps for Node 20.
// A package passes its entries (default src/index.ts) and any option of its own.

/**
 * @param {string[] | Record<string, string>} [entry]
 * @param {import('tsup').Options} [options]
 * @returns {import('tsup').Options}
 */
export function packageBuild(entry = ['src/index.ts'], options = {}) {
  return {
    entry,
    format: ['esm'],
    dts: true,
    clean: true,
    sourcemap: true,
    target: 'node20',
    ...options,
  };
}
