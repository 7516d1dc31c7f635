// Run by test/orphans.test.ts: launches 2 ranks that print their pid and sleep; the test then
// kills this process with SIGKILL.
import { launch } from '../src/index.js';

await launch({
  nprocPerNode: 2,
  command: [
    process.execPath,
    '-e',
    'console.log("pid " + process.pid); setTimeout(() => {}, 60000)',
  ],
  output: 'prefix',
  killGraceMs: 1000,
});
