// Per test file (vitest setupFiles): remove the folders tempDir made once the file's tests end.
import { afterAll } from 'vitest';
import { removeTempDirs } from './temp-dir.js';

afterAll(removeTempDirs);
