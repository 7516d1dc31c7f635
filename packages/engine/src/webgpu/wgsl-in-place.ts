// A WGSL compute pass that writes over its tensors' own GPU buffers. tfjs-backend-webgpu's
// programs (`runWebGPUProgram`) bind every input read-only and write one new `result`; an
// update of several tensors in place (AdamW's param, m and v) needs read_write bindings, so this
// records its dispatch itself, into the backend's current compute pass (the same ordering as
// tfjs's own programs, which Dawn synchronises dispatch by dispatch).
import { env, type TensorInfo } from '@tensorflow/tfjs-core';

/** The parts of tfjs-backend-webgpu 4.22's WebGPUBackend this uses (structural: no import of the package). */
interface WebGpuInternals {
  device: GPUDevice;
  tensorMap: { get(dataId: object): { values: unknown; resource?: unknown } | undefined };
  uploadToGPU(dataId: object): void;
  commandQueueOwnedIds: WeakSet<object>;
  commandEncoder: GPUCommandEncoder | null;
  computePassEncoder: GPUComputePassEncoder | null;
  dispatchCountInPass: number;
  activeTimers?: unknown[] | null;
  ensureCommandEncoderReady(): void;
  endComputePassEncoder(): void;
  submitQueue(): void;
  makeUniforms(u: { type: 'float32' | 'int32' | 'uint32'; data: number[] }[]): GPUBufferBinding;
}

/** One in-place pass: `code` binds `writes` (read_write), then `reads` (read), then a uniform struct, in that order. */
export interface InPlacePass {
  /** Names the pipeline in the per-device cache. */
  key: string;
  code: string;
  writes: TensorInfo[];
  reads: TensorInfo[];
  uniforms: { type: 'float32' | 'int32' | 'uint32'; data: number[] }[];
  workgroups: [number, number];
}

const pipelines = new WeakMap<GPUDevice, Map<string, GPUComputePipeline>>();

function pipelineFor(device: GPUDevice, key: string, code: string): GPUComputePipeline {
  const cache = pipelines.get(device) ?? new Map<string, GPUComputePipeline>();
  pipelines.set(device, cache);
  let pipeline = cache.get(key);
  if (!pipeline) {
    const module = device.createShaderModule({ code, label: key });
    pipeline = device.createComputePipeline({
      compute: { module, entryPoint: 'main' },
      layout: 'auto',
      label: key,
    });
    cache.set(key, pipeline);
  }
  return pipeline;
}

/** The GPU buffer of `t` (uploaded first if its values are still on the host). */
function bufferOf(gpu: WebGpuInternals, t: TensorInfo, key: string): GPUBuffer {
  gpu.uploadToGPU(t.dataId);
  const resource = gpu.tensorMap.get(t.dataId)?.resource;
  if (!(resource instanceof GPUBuffer))
    throw new Error(
      `${key}: a tensor is not in a GPU buffer (a texture?), which it cannot write in place`,
    );
  return resource;
}

/** Records `pass` on the webgpu backend `backend`; the written tensors' host copies are dropped (they go stale). */
export function dispatchInPlace(backend: unknown, pass: InPlacePass): void {
  const gpu = backend as WebGpuInternals;
  const tensors = [...pass.writes, ...pass.reads];
  const buffers = tensors.map((t) => bufferOf(gpu, t, pass.key));
  const pipeline = pipelineFor(gpu.device, pass.key, pass.code);
  const entries: GPUBindGroupEntry[] = buffers.map((buffer, i) => ({
    binding: i,
    resource: { buffer },
  }));
  entries.push({ binding: buffers.length, resource: gpu.makeUniforms(pass.uniforms) });
  const bindGroup = gpu.device.createBindGroup({ layout: pipeline.getBindGroupLayout(0), entries });
  // disposed while queued: tfjs then frees them only after the next submit
  for (const t of tensors) gpu.commandQueueOwnedIds.add(t.dataId);
  gpu.ensureCommandEncoderReady();
  gpu.computePassEncoder ??= gpu.commandEncoder!.beginComputePass({});
  gpu.computePassEncoder.setPipeline(pipeline);
  gpu.computePassEncoder.setBindGroup(0, bindGroup);
  gpu.computePassEncoder.dispatchWorkgroups(pass.workgroups[0], pass.workgroups[1], 1);
  gpu.dispatchCountInPass++;
  for (const t of pass.writes) gpu.tensorMap.get(t.dataId)!.values = null;
  // a timed run (tf.time) opens a pass per program: close this one; otherwise tfjs's batching
  if (gpu.activeTimers != null) gpu.endComputePassEncoder();
  else if ((env().get('WEBGPU_DEFERRED_SUBMIT_BATCH_SIZE') as number) <= gpu.dispatchCountInPass) {
    gpu.endComputePassEncoder();
    gpu.submitQueue();
  }
}

/** Workgroups [x, y] covering `n` threads in groups of `size` within the 65535-a-dimension limit. */
export function workgroupsFor(n: number, size: number): [number, number] {
  const groups = Math.max(1, Math.ceil(n / size));
  const x = Math.min(groups, 65535);
  return [x, Math.ceil(groups / x)];
}
