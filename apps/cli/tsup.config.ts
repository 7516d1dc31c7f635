import { packageBuild } from '@rl2/tsup-config';
import { defineConfig } from 'tsup';

// cli.ts is the `rl2` bin (its shebang is kept); only index.ts has public types.
export default defineConfig(
  packageBuild(['src/index.ts', 'src/cli.ts'], { dts: { entry: 'src/index.ts' } }),
);
