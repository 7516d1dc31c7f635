import { cpSync, existsSync, readdirSync, rmSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { ModelsError } from '../errors.js';
import { commitDir, tempDirBeside } from '../atomic/atomic-dir.js';
import { DTYPE_BYTES, safetensorsDtypeOf, type TorchDtype } from './float-formats.js';
import type { TensorSpec } from './safetensors-header.js';
import { SafetensorsWriter } from './safetensors-writer.js';
import {
  DEFAULT_MAX_SHARD_SIZE,
  parseShardSize,
  type ShardPlan,
  planShards,
} from './shard-plan.js';

/** The index file of a sharded checkpoint. */
export const INDEX_FILE = 'model.safetensors.index.json';

/** Weight files a save replaces; other files already in the folder are kept. */
const WEIGHT_FILE = /^model(-\d{5}-of-\d{5})?\.safetensors$|^model\.safetensors\.index\.json$/;

/** How a checkpoint's weights are stored. */
export interface CheckpointFormat {
  /** `float32` (default), `bfloat16` or `float16`; values are rounded to nearest even. */
  dtype?: TorchDtype;
  /** Largest shard: bytes or `5GB`, `500MB`, `2GiB` (default 5GB, as `save_pretrained`). */
  maxShardSize?: number | string;
}

/**
 * Writes a Hugging Face checkpoint folder the way `save_pretrained` lays it out
 * (model.safetensors, or model-0000i-of-0000n.safetensors + model.safetensors.index.json),
 * streaming: tensors are written one by one, in any order, to their planned place. Everything
 * goes to a work folder beside `dir`; `commit` flushes it to disk and swaps it in, so a crash
 * leaves the previous `dir` whole and no partial file in it.
 */
export class CheckpointWriter {
  private readonly files = new Map<string, SafetensorsWriter>();
  private readonly fileOf = new Map<string, SafetensorsWriter>();

  private constructor(
    readonly dir: string,
    /** The work folder: put any other files of the checkpoint here before `commit`. */
    readonly workDir: string,
    readonly plan: ShardPlan,
  ) {}

  /** Plans the shards of `specs` (in model order) and creates their files in a work folder. */
  static open(
    dir: string,
    specs: readonly TensorSpec[],
    format: CheckpointFormat = {},
  ): CheckpointWriter {
    const dtype = safetensorsDtypeOf(format.dtype ?? 'float32', 'save dtype');
    const plan = planShards(
      specs,
      DTYPE_BYTES[dtype],
      parseShardSize(format.maxShardSize ?? DEFAULT_MAX_SHARD_SIZE),
    );
    const writer = new CheckpointWriter(dir, tempDirBeside(dir), plan);
    try {
      for (const { file, specs: inFile } of plan.files) {
        const w = SafetensorsWriter.create(join(writer.workDir, file), inFile, dtype);
        writer.files.set(file, w);
        for (const s of inFile) writer.fileOf.set(s.name, w);
      }
    } catch (e) {
      writer.abort();
      throw e;
    }
    return writer;
  }

  /** Writes tensor `name` (float32 values) into its shard. */
  write(name: string, data: Float32Array): void {
    const file = this.fileOf.get(name);
    if (!file)
      throw new ModelsError(
        'INVALID_ARGUMENT',
        `${this.dir}: tensor "${name}" is not part of this checkpoint`,
      );
    file.write(name, data);
  }

  /** Writes `value` as `<workDir>/<file>` (2-space JSON, as transformers writes config.json). */
  writeJson(file: string, value: unknown): void {
    writeFileSync(join(this.workDir, file), `${JSON.stringify(value, null, 2)}\n`);
  }

  /** Closes every shard (all planned tensors must be written), writes the index, swaps the folder in; returns the files. */
  commit(): string[] {
    try {
      for (const w of this.files.values()) w.close();
      if (this.plan.files.length > 1) {
        const weightMap = Object.fromEntries(
          Object.entries(this.plan.weightMap).sort(([a], [b]) => (a < b ? -1 : 1)),
        );
        this.writeJson(INDEX_FILE, {
          metadata: { total_size: this.plan.totalSize },
          weight_map: weightMap,
        });
      }
      keepOtherFiles(this.dir, this.workDir);
      const names = readdirSync(this.workDir).sort();
      commitDir(this.workDir, this.dir);
      return names.map((n) => join(this.dir, n));
    } catch (e) {
      this.abort();
      throw e;
    }
  }

  /** Drops the work folder; `dir` stays as it was. */
  abort(): void {
    for (const w of this.files.values()) w.abort();
    rmSync(this.workDir, { recursive: true, force: true });
  }
}

/** Copies what `dir` holds besides weight files (README, tokenizer, ...) into the new folder, unless rewritten. */
function keepOtherFiles(dir: string, workDir: string): void {
  if (!existsSync(dir)) return;
  const written = new Set(readdirSync(workDir));
  for (const name of readdirSync(dir)) {
    if (!WEIGHT_FILE.test(name) && !written.has(name))
      cpSync(join(dir, name), join(workDir, name), { recursive: true });
  }
}
