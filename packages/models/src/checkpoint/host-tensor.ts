/** A host tensor: row-major float32 values and their shape. */
export interface HostTensor {
  shape: number[];
  data: Float32Array;
}
