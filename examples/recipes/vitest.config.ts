import { packageConfig } from '@rl2/vitest-config';
import { defineConfig } from 'vitest/config';

export default defineConfig(
  packageConfig(import.meta.dirname, {
    include: ['**/*.test.ts'],
    exclude: ['**/node_modules/**'],
  }),
);
