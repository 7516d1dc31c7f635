import { TrainersError, serveModel } from '@rl2/trainers';
import type { CAC } from 'cac';
import type { CliIo } from '../cli-io.js';

/**
 * Registers `rl2 serve --model PATH`: the embedded engine behind an SGLang-compatible HTTP API
 * (loopback unless --host says otherwise), until Ctrl-C.
 */
export function registerServeCommand(cli: CAC, io: CliIo): void {
  cli
    .command('serve', 'serve a checkpoint over an SGLang-compatible HTTP API (/generate, /health, /update_weights_from_disk)')
    .option('--model <dir>', 'Hugging Face checkpoint folder (e.g. runs/addition-grpo/step-30/model) or hub id (e.g. Qwen/Qwen3-0.6B, downloaded into the HF cache)')
    .option('--host <host>', 'interface to bind; 0.0.0.0 exposes it beyond this machine', { default: '127.0.0.1' })
    .option('--port <n>', 'port (0: any free port)', { default: 30000 })
    .option('--max-body-bytes <n>', 'largest request body; bigger requests get HTTP 413', { default: 8 * 1024 * 1024 })
    .option('--max-batch <n>', 'requests decoded together', { default: 16 })
    .option('--seed <n>', 'base sampling seed of requests without sampling_seed', { default: 0 })
    .option('--threads <n>', 'compute threads (default: RL2_THREADS or all cores)')
    .example('rl2 serve --model runs/addition-grpo/step-30/model --port 30000')
    .action(async (flags: Record<string, string | number | undefined>) => {
      if (!flags.model) throw new TrainersError('INVALID_ARGUMENT', 'rl2 serve needs --model DIR (a Hugging Face checkpoint folder) or a hub id such as Qwen/Qwen3-0.6B');
      const server = await serveModel({
        model: String(flags.model),
        host: String(flags.host),
        port: Number(flags.port),
        maxBodyBytes: Number(flags.maxBodyBytes),
        maxBatch: Number(flags.maxBatch),
        seed: Number(flags.seed),
        ...(flags.threads === undefined ? {} : { threads: Number(flags.threads) }),
        log: (line) => io.stdout.write(`${line}\n`),
      });
      io.stdout.write(`ready: ${server.url} (Ctrl-C to stop)\n`);
      await new Promise<void>((resolve) => {
        if (io.signal?.aborted) resolve();
        io.signal?.addEventListener('abort', () => resolve(), { once: true });
        if (!io.signal) process.once('SIGINT', () => resolve());
      });
      await server.close();
      io.stdout.write('stopped\n');
      return 0;
    });
}
