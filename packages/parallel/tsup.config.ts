import { defineConfig } from 'tsup';

export default defineConfig({
  // the communication worker is its own entry: initProcessGroup loads ./comm-worker.js at run time
  entry: { index: 'src/index.ts', 'comm-worker': 'src/comm/comm-worker.ts' },
  format: ['esm'],
  dts: true,
  clean: true,
  sourcemap: true,
  target: 'node20',
});
