import { packageBuild } from '@rl2/tsup-config';
import { defineConfig } from 'tsup';

// The communication worker is its own entry: initProcessGroup loads ./comm-worker.js at run time.
export default defineConfig(
  packageBuild({ index: 'src/index.ts', 'comm-worker': 'src/comm/comm-worker.ts' }),
);
