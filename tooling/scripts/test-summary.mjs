#!/usr/bin/env node
// Adds up the vitest JSON results every package wrote (.vitest/results.json) and prints the
// one line CI reads: `N passed, N failed`. A package with a test script but no results file
// (its vitest crashed before reporting) counts as one failure, so nothing is lost silently;
// so does a package whose tests left rl2-* folders in the temp directory (.vitest/temp-leaks.txt,
// written by tooling/vitest/temp-guard.js).
import { existsSync, readdirSync, readFileSync } from 'node:fs';
import { join, resolve } from 'node:path';

const root = resolve(import.meta.dirname, '..', '..');
let passed = 0;
let failed = 0;
let skipped = 0;
for (const group of ['packages', 'apps', 'tooling', 'examples']) {
  const base = join(root, group);
  if (!existsSync(base)) continue;
  for (const name of readdirSync(base)) {
    const pkgFile = join(base, name, 'package.json');
    if (!existsSync(pkgFile)) continue;
    const pkg = JSON.parse(readFileSync(pkgFile, 'utf8'));
    if (!pkg.scripts?.test) continue;
    const results = join(base, name, '.vitest', 'results.json');
    if (!existsSync(results)) {
      console.log(`${group}/${name}: no test results (its test run crashed or did not start)`);
      failed += 1;
      continue;
    }
    const r = JSON.parse(readFileSync(results, 'utf8'));
    const suiteErrors = (r.testResults ?? []).filter(
      (s) => s.status === 'failed' && (s.assertionResults ?? []).length === 0,
    ).length;
    const leaksFile = join(base, name, '.vitest', 'temp-leaks.txt');
    const leaks = existsSync(leaksFile) ? 1 : 0;
    if (leaks) {
      const names = readFileSync(leaksFile, 'utf8').trim().split('\n');
      console.log(
        `${group}/${name}: tests left ${names.length} rl2-* temp entries: ${names.join(', ')}`,
      );
    }
    passed += r.numPassedTests ?? 0;
    failed += (r.numFailedTests ?? 0) + suiteErrors + leaks;
    skipped += (r.numPendingTests ?? 0) + (r.numTodoTests ?? 0);
    console.log(
      `${group}/${name}: ${r.numPassedTests} passed, ${r.numFailedTests + suiteErrors + leaks} failed`,
    );
  }
}
// .ci/run's lint, format and type checks: each one that failed is one failure here.
const flag = process.argv.indexOf('--checks-failed');
const checksFailed = flag > 0 ? Number(process.argv[flag + 1]) : 0;
if (checksFailed > 0) console.log(`checks (lint, format:check, typecheck): ${checksFailed} failed`);
failed += checksFailed;
console.log(`${passed} passed, ${failed} failed${skipped ? `, ${skipped} skipped` : ''}`);
process.exitCode = failed > 0 ? 1 : 0;
