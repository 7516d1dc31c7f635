import { packageBuild } from '@rl2/tsup-config';
import { defineConfig } from 'tsup';

// The example envs get their own files so rollout.env_path can point at dist/envs/*.js.
export default defineConfig(
  packageBuild(['src/index.ts', 'src/envs/calculator-env.ts', 'src/envs/arithmetic-env.ts']),
);
