// Test helper for the crash-mid-save test: starts a sharded checkpoint save into argv[2] with
// CheckpointWriter, then stops at the point argv[3] names ("tensors": after half the tensors,
// "commit": with every file written, just before the swap), prints HANG and waits forever
// for the SIGKILL the test sends.
import { CheckpointWriter } from '../../src/checkpoint/checkpoint-writer.js';

const [dir, phase] = process.argv.slice(2) as [string, 'tensors' | 'commit'];
const specs = Array.from({ length: 8 }, (_, i) => ({
  name: `layer.${i}.weight`,
  shape: [256, 64],
}));
const writer = CheckpointWriter.open(dir, specs, { dtype: 'bfloat16', maxShardSize: '100KB' });
writer.writeJson('config.json', { torch_dtype: 'bfloat16', note: 'new' });
const upTo = phase === 'tensors' ? specs.length / 2 : specs.length;
for (const s of specs.slice(0, upTo)) writer.write(s.name, new Float32Array(256 * 64).fill(2));
process.stdout.write('HANG\n');
Atomics.wait(new Int32Array(new SharedArrayBuffer(4)), 0, 0);
