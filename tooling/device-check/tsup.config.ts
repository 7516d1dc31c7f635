import { defineConfig } from 'tsup';

// check.ts and everything it imports (the @rl2 packages, tfjs) in one ES module for Node 20;
// dawn.node (the webgpu package) stays outside, shipped beside the bundle; no native addon.
export default defineConfig({
  entry: ['check.ts'],
  format: ['esm'],
  platform: 'node',
  target: 'node20',
  dts: false,
  sourcemap: false,
  clean: false,
  outExtension: () => ({ js: '.mjs' }),
  noExternal: [/^(?!webgpu$|@rl2\/engine-linux-x64-gnu$)/],
  external: ['webgpu', '@rl2/engine-linux-x64-gnu'],
  banner: {
    js: "import { createRequire as __cr } from 'node:module'; const require = __cr(import.meta.url);",
  },
});
