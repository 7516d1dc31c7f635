import { SafetensorsReader, SafetensorsWriter } from '@rl2/models';
import { TrainersError } from '../errors.js';

/** Float32 arrays by name with their shapes. */
export type NamedArrays = Record<string, { shape: number[]; data: Float32Array }>;

/**
 * Writes float32 arrays as a safetensors file (https://huggingface.co/docs/safetensors), one
 * array at a time with positioned writes: optimizer moments are twice the model, so no buffer
 * ever holds the file.
 */
export function writeTensorFile(
  path: string,
  arrays: NamedArrays,
  metadata: Record<string, string> = {},
): void {
  const writer = SafetensorsWriter.create(
    path,
    Object.entries(arrays).map(([name, a]) => ({ name, shape: a.shape })),
    'F32',
    metadata,
  );
  try {
    for (const [name, a] of Object.entries(arrays)) writer.write(name, a.data);
  } catch (e) {
    writer.abort();
    throw e;
  }
  writer.close();
}

/** Reads a file written by `writeTensorFile`, array by array (files of any size). */
export function readTensorFile(path: string): {
  arrays: NamedArrays;
  metadata: Record<string, string>;
} {
  let reader: SafetensorsReader;
  try {
    reader = SafetensorsReader.open(path);
  } catch (e) {
    throw new TrainersError(
      'CHECKPOINT',
      `${(e as Error).message}; the checkpoint is damaged, resume from another one`,
    );
  }
  try {
    const arrays: NamedArrays = {};
    for (const name of reader.names()) arrays[name] = reader.read(name);
    return { arrays, metadata: reader.header.metadata };
  } finally {
    reader.close();
  }
}
