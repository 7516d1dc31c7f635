import { existsSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import type { HostTensor } from './host-tensor.js';
import { INDEX_FILE } from './checkpoint-writer.js';
import { checkpointError, type TensorEntry } from './safetensors-header.js';
import { SafetensorsReader } from './safetensors-reader.js';

/** Parses the JSON file at `path`; a failure names the file and says what to do. */
export function readJsonFile(path: string): unknown {
  let text: string;
  try {
    text = readFileSync(path, 'utf8');
  } catch (e) {
    throw checkpointError(path, `cannot read (${(e as Error).message})`);
  }
  try {
    return JSON.parse(text);
  } catch (e) {
    throw checkpointError(
      path,
      `is not valid JSON (${(e as Error).message}); fix the file or download it again`,
    );
  }
}

/**
 * The tensors of a Hugging Face checkpoint folder, `model.safetensors` or the shards listed in
 * `model.safetensors.index.json`, read one at a time with positioned reads (files of any size;
 * F32/F16/BF16 widened to float32). Close it when done.
 */
export class CheckpointReader {
  private constructor(
    readonly dir: string,
    private readonly fileOf: Map<string, SafetensorsReader>,
    private readonly readers: SafetensorsReader[],
  ) {}

  static open(dir: string): CheckpointReader {
    const indexPath = join(dir, INDEX_FILE);
    if (!existsSync(indexPath)) {
      const path = join(dir, 'model.safetensors');
      if (!existsSync(path))
        throw checkpointError(
          dir,
          'no model.safetensors or model.safetensors.index.json; is it a Hugging Face model folder?',
        );
      const reader = SafetensorsReader.open(path);
      return new CheckpointReader(dir, new Map(reader.names().map((n) => [n, reader])), [reader]);
    }
    const weightMap = (readJsonFile(indexPath) as { weight_map?: Record<string, string> } | null)
      ?.weight_map;
    if (!weightMap || typeof weightMap !== 'object')
      throw checkpointError(indexPath, 'has no "weight_map"');
    const byFile = new Map<string, SafetensorsReader>();
    const fileOf = new Map<string, SafetensorsReader>();
    try {
      for (const [name, file] of Object.entries(weightMap)) {
        let reader = byFile.get(file);
        if (!reader) {
          reader = SafetensorsReader.open(join(dir, file));
          byFile.set(file, reader);
        }
        if (!reader.entry(name))
          throw checkpointError(
            indexPath,
            `weight_map puts ${name} in ${file}, which has no such tensor`,
          );
        fileOf.set(name, reader);
      }
    } catch (e) {
      for (const r of byFile.values()) r.close();
      throw e;
    }
    return new CheckpointReader(dir, fileOf, [...byFile.values()]);
  }

  /** Tensor names, in file order. */
  names(): string[] {
    return [...this.fileOf.keys()];
  }

  /** Dtype, shape and place of tensor `name`, or undefined. */
  entry(name: string): TensorEntry | undefined {
    return this.fileOf.get(name)?.entry(name);
  }

  /** Tensor `name` as float32. */
  read(name: string): HostTensor {
    const reader = this.fileOf.get(name);
    if (!reader) throw checkpointError(this.dir, `has no tensor "${name}"`);
    return reader.read(name);
  }

  /** BF16/F16 tensor `name` as its 16-bit bits. */
  readBits(name: string): Uint16Array {
    const reader = this.fileOf.get(name);
    if (!reader) throw checkpointError(this.dir, `has no tensor "${name}"`);
    return reader.readBits(name);
  }

  close(): void {
    for (const r of this.readers) r.close();
  }
}

/**
 * Reads all weights of a Hugging Face checkpoint folder as float32 (see `CheckpointReader`):
 * the result is the only copy, the files are never held in memory.
 */
export async function readCheckpointWeights(dir: string): Promise<Map<string, HostTensor>> {
  const reader = CheckpointReader.open(dir);
  try {
    return new Map(reader.names().map((name) => [name, reader.read(name)]));
  } finally {
    reader.close();
  }
}
