/**
 * The program each env worker thread runs (an ES module, started from a data: URL so that it
 * needs no file of its own next to the bundle). It loads the env module (`workerData.file`;
 * TypeScript through tsx's `tsImport`, whose URL the main thread resolved), tells the main
 * thread whether it has `step` and `reset`, then answers `{id, op, args}` messages with
 * `{id, ok, value}` or `{id, ok: false, message}`. `ping` answers at once: a worker that does
 * not is blocked (a synchronous loop in `step`) and gets replaced.
 */
export const ENV_WORKER_SOURCE = `
import { parentPort, workerData } from 'node:worker_threads';
import { pathToFileURL } from 'node:url';

const { file, tsxApi } = workerData;
const describe = (e) => (e && typeof e === 'object' && 'message' in e ? String(e.message) : String(e));
let mod;
try {
  const url = pathToFileURL(file).href;
  mod = tsxApi ? await (await import(tsxApi)).tsImport(url, url) : await import(url);
} catch (e) {
  parentPort.postMessage({ type: 'load-error', message: describe(e) });
}
if (mod) {
  const env = typeof mod.step === 'function' ? mod : (mod.default ?? {});
  parentPort.postMessage({ type: 'ready', step: typeof env.step === 'function', reset: typeof env.reset === 'function' });
  parentPort.on('message', async ({ id, op, args }) => {
    if (op === 'ping') return parentPort.postMessage({ id, ok: true });
    let reply;
    try {
      reply = { id, ok: true, value: await env[op](...args) };
    } catch (e) {
      reply = { id, ok: false, message: describe(e) };
    }
    try {
      parentPort.postMessage(reply);
    } catch (e) {
      const why = '() returned a value that cannot be sent between threads (' + describe(e) + ')';
      parentPort.postMessage({ id, ok: false, message: op + why + ': return plain data' });
    }
  });
}
`;
