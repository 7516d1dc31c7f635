import { defineConfig } from 'tsup';

export default defineConfig({
  // The example envs get their own files so rollout.env_path can point at dist/envs/*.js.
  entry: ['src/index.ts', 'src/envs/calculator-env.ts', 'src/envs/arithmetic-env.ts'],
  format: ['esm'],
  dts: true,
  clean: true,
  sourcemap: true,
  target: 'node20',
});
