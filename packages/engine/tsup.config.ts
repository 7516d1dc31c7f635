import { packageBuild } from '@rl2/tsup-config';
import { defineConfig } from 'tsup';

export default defineConfig(
  packageBuild({ index: 'src/index.ts', 'testing/index': 'src/testing/index.ts' }),
);
