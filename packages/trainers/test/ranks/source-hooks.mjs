// Module resolve hook for rank processes: `@rl2/<name>` -> packages/<name>/src/index.ts, as the
// vitest config does, so multi-process tests run on source (no build). Registered by register-source.mjs.
import { existsSync } from 'node:fs';
import { fileURLToPath } from 'node:url';

const packages = new URL('../../../', import.meta.url);

export async function resolve(specifier, context, next) {
  const m = /^@rl2\/([a-z0-9-]+)$/.exec(specifier);
  if (m) {
    const entry = new URL(`${m[1]}/src/index.ts`, packages);
    if (existsSync(fileURLToPath(entry))) return next(entry.href, context); // tsx resolves (and later loads) the .ts file
  }
  return next(specifier, context);
}
