// Run by test/ppo-parallel.test.ts under launch(): `rl2 ppo` with the JSON list of config
// overrides in PPO_OVERRIDES on this rank (the data-parallel world comes from the launcher's env).
// Prints `RESULT {"rank", "steps": [metrics of every step]}`.
import { loadConfig, ppoConfigSchema, runPpo } from '../../src/index.js';

const overrides = JSON.parse(process.env.PPO_OVERRIDES ?? '[]') as string[];
const steps: Record<string, number>[] = [];
await runPpo(loadConfig(ppoConfigSchema, { overrides }), { stdout: { write: () => true } as unknown as NodeJS.WriteStream, onStep: (r) => steps.push({ ...r }) });
console.log(`RESULT ${JSON.stringify({ rank: Number(process.env.RANK), steps })}`);
