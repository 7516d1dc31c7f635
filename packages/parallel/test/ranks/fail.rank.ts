// Run by test/collectives.test.ts. FAIL_MODE=exit: FAIL_RANK exits 3 after the rendezvous while
// the others wait in an all-reduce. FAIL_MODE=stall: FAIL_RANK never calls the all-reduce.
import { initProcessGroup } from '../../src/index.js';

try {
  const world = await initProcessGroup();
  const me = world.rank === Number(process.env.FAIL_RANK);
  if (me && process.env.FAIL_MODE === 'exit') {
    console.error(`rank ${world.rank} gives up on purpose`);
    process.exit(3);
  }
  if (me && process.env.FAIL_MODE === 'stall') {
    await new Promise((r) => setTimeout(r, 30_000));
  }
  world.allReduce(new Float32Array(8));
  await world.close();
} catch (e) {
  const err = e as { code?: string; message: string };
  console.error(`${err.code}: ${err.message}`);
  process.exit(1);
}
