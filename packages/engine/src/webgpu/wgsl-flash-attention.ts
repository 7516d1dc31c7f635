// Causal attention within segments in tiles (FlashAttention, Dao et al. 2022,
// https://arxiv.org/abs/2205.14135; its backward split as in FlashAttention-2, Dao 2023,
// https://arxiv.org/abs/2307.08691) as WGSL programs on tfjs's webgpu backend, under the native
// kernels' names (`Rl2FlashAttention`, `Rl2FlashAttentionGrad`) so `flashAttention` and the
// models take them there. A workgroup holds a block of 64 queries (a thread each) and walks the
// keys a tile at a time through workgroup memory with a running max and sum; the backward
// recomputes the scores per tile from the saved log-sum-exp: dQ by query blocks, dK and dV by
// key blocks (no atomics). Nothing of size T x T exists, only tiles of T_tile x head_dim.
import {
  getKernel,
  type KernelConfig,
  type KernelFunc,
  type TensorInfo,
} from '@tensorflow/tfjs-core';
import { FLASH_ATTENTION, FLASH_ATTENTION_GRAD } from '../fused/fused-flash-attention.js';
import type { Program, WebGpuBackendLike } from './wgsl-program.js';

/** Threads of a workgroup: the queries (forward, dQ) or keys (dK, dV) of one block. */
const WG = 64;

/** The attention's sizes: dims [B, Tq, nH, nKv, d] or [B, Tq, nH, nKv, d, Tk] (query positions given). */
interface Dims {
  b: number;
  tq: number;
  nH: number;
  nKv: number;
  d: number;
  tk: number;
  positions: boolean;
}

function dimsOf(attrs: Record<string, unknown>): Dims {
  const [b, tq, nH, nKv, d, tk] = attrs.dims as number[];
  return { b: b!, tq: tq!, nH: nH!, nKv: nKv!, d: d!, tk: tk ?? tq!, positions: tk !== undefined };
}

/** Rows of a tile: two [tile, d] float blocks and four per-row words fit the workgroup memory. */
function tileRows(d: number, workgroupBytes: number): number {
  return Math.max(1, Math.min(WG, Math.floor((workgroupBytes - 64) / (8 * d + 16))));
}

/** The uniforms every program here declares, in this order (`uniformsOf` fills them). */
const UNIFORMS =
  'tq : i32, tk : i32, nh : i32, nkv : i32, group : i32, blocks : i32, total : i32, haspos : i32, rows : i32, outn : i32, ' +
  'tile : i32, scale : f32,';

/** `rows` = B nH Tq (the query rows of lse and D); `outn`: where a program's second output starts. */
function uniformsOf(
  x: Dims,
  tile: number,
  blocks: number,
  total: number,
  outn: number,
  scale: number,
) {
  const rows = x.b * x.nH * x.tq;
  const group = x.nH / x.nKv;
  const ints = [
    x.tq,
    x.tk,
    x.nH,
    x.nKv,
    group,
    blocks,
    total,
    x.positions ? 1 : 0,
    rows,
    outn,
    tile,
  ];
  return [
    ...ints.map((v) => ({ type: 'int32' as const, data: [v] })),
    { type: 'float32' as const, data: [scale] },
  ];
}

/**
 * Shared by the programs: this workgroup's block (`slot` past `total` in a padded dispatch
 * recomputes the last block and writes nothing), and the workgroup words that carry a value
 * every thread agrees on through `workgroupUniformLoad` (loops with barriers need uniform bounds).
 */
const PRELUDE = `
  var<workgroup> flag : atomic<i32>;
  var<workgroup> agreed : i32;
  /** The value of 'flag' once every thread has added to it, as a uniform value. */
  fn agree() -> i32 {
    workgroupBarrier();
    if (i32(localId.x) == 0) { agreed = atomicLoad(&flag); }
    return workgroupUniformLoad(&agreed);
  }`;

const BLOCK = `
  let tid = i32(localId.x);
  let slot = index / ${WG};
  let w = min(slot, uniforms.total - 1);
  let blk = w % uniforms.blocks;
  let bh = w / uniforms.blocks;`;

/** A query thread's row: position \`at\`, its segment, q scaled by 1/sqrt(d); \`live\` when it writes. */
const QUERY_ROW = (d: number) => `
  ${BLOCK}
  let h = bh % uniforms.nh;
  let b = bh / uniforms.nh;
  let kvh = h / uniforms.group;
  let i = blk * ${WG} + tid;
  let live = slot < uniforms.total && i < uniforms.tq;
  let iq = min(i, uniforms.tq - 1);
  var at = iq;
  if (uniforms.haspos == 1) { at = qposs[b * uniforms.tq + iq]; }
  let segAt = segs[b * uniforms.tk + at];
  let qbase = ((b * uniforms.tq + iq) * uniforms.nh + h) * ${d};
  let kvbase = (b * uniforms.nkv + kvh) * uniforms.tk * ${d};
  let row = (b * uniforms.nh + h) * uniforms.tq + iq;
  var qv : array<f32, ${d}>;
  for (var t = 0; t < ${d}; t++) { qv[t] = qs[qbase + t] * uniforms.scale; }
  // keys past the block's last position are never seen
  if (tid == 0) { atomicStore(&flag, -1); }
  workgroupBarrier();
  if (live) { atomicMax(&flag, at); }
  let kend = agree() + 1;`;

/**
 * The key tiles a query block may see: segment ids first, then (when any pair of the tile is
 * allowed) K and V into workgroup memory; \`body\` runs per thread with \`ok(jj)\` for key j0 + jj.
 */
const KEY_TILES = (d: number, tile: number, body: string) => `
  for (var j0 = 0; j0 < kend; j0 += ${tile}) {
    workgroupBarrier();
    if (tid == 0) { atomicStore(&flag, 0); }
    for (var e = tid; e < ${tile}; e += ${WG}) { st[e] = segs[b * uniforms.tk + min(j0 + e, uniforms.tk - 1)]; }
    workgroupBarrier();
    var mine = false;
    if (live) {
      for (var jj = 0; jj < uniforms.tile; jj++) { if (j0 + jj <= at && st[jj] == segAt) { mine = true; break; } }
    }
    if (mine) { atomicStore(&flag, 1); }
    if (agree() == 0) { continue; }
    let last = kvbase + uniforms.tk * ${d} - 1;
    for (var e = tid; e < ${tile * d}; e += ${WG}) {
      kt[e] = ks[min(kvbase + j0 * ${d} + e, last)];
      vt[e] = vs[min(kvbase + j0 * ${d} + e, last)];
    }
    workgroupBarrier();
    if (live) { ${body} }
  }`;

const KEY_TILE_MEMORY = (d: number, tile: number) => `
  var<workgroup> kt : array<f32, ${tile * d}>;
  var<workgroup> vt : array<f32, ${tile * d}>;
  var<workgroup> st : array<i32, ${tile}>;`;

/** A program by query blocks over key tiles: `setup` per thread, `body` per tile, `finish` where the thread writes. */
function queryBlockCode(
  d: number,
  tile: number,
  setup: string,
  body: string,
  finish: string,
): string {
  return `
    ${PRELUDE}
    ${KEY_TILE_MEMORY(d, tile)}
    fn main(index : i32) {
      ${QUERY_ROW(d)}
      ${setup}
      ${KEY_TILES(d, tile, body)}
      if (live) { ${finish} }
    }`;
}

/** Allowed: key j0 + jj is at or before the query's position, in its segment. */
const OK = (jj: string) => `(j0 + ${jj} <= at && st[${jj}] == segAt)`;

function program(key: string, names: string[], size: number, total: number, code: string): Program {
  return {
    variableNames: names,
    outputShape: [size],
    shaderKey: key,
    dispatchLayout: { x: [0] },
    dispatch: [total, 1, 1],
    workgroupSize: [WG, 1, 1],
    uniforms: UNIFORMS,
    getUserCode: () => code,
  };
}

/**
 * Forward: out [B, Tq, nH, d] then lse [B, nH, Tq] (from element `outn`) in one buffer. Per key
 * tile: scores s, the tile's max, the running max m rescaling sum l and the accumulator.
 */
function forwardProgram(x: Dims, tile: number, total: number): Program {
  const { d } = x;
  const body = `
    var s : array<f32, ${tile}>;
    var tmax = -3.402823e+38;
    for (var jj = 0; jj < uniforms.tile; jj++) {
      if (${OK('jj')}) {
        var dot = 0.0;
        for (var t = 0; t < ${d}; t++) { dot += qv[t] * kt[jj * ${d} + t]; }
        s[jj] = dot;
        tmax = max(tmax, dot);
      }
    }
    if (tmax > -3.402823e+38) {
      let mnew = max(m, tmax);
      let alpha = exp(m - mnew);
      l *= alpha;
      for (var t = 0; t < ${d}; t++) { acc[t] *= alpha; }
      for (var jj = 0; jj < uniforms.tile; jj++) {
        if (${OK('jj')}) {
          let p = exp(s[jj] - mnew);
          l += p;
          for (var t = 0; t < ${d}; t++) { acc[t] += p * vt[jj * ${d} + t]; }
        }
      }
      m = mnew;
    }`;
  const setup = `
    var m = -3.402823e+38;
    var l = 0.0;
    var acc : array<f32, ${d}>;`;
  const finish = `
    let inv = select(0.0, 1.0 / l, l > 0.0);
    for (var t = 0; t < ${d}; t++) { result[qbase + t] = acc[t] * inv; }
    result[uniforms.outn + row] = select(uniforms.INFINITY, m + log(l), l > 0.0);`;
  const code = queryBlockCode(d, tile, setup, body, finish);
  const size = x.b * x.tq * x.nH * d + x.b * x.nH * x.tq;
  return program(
    `rl2FlashAttention_${d}_${tile}`,
    ['qs', 'ks', 'vs', 'segs', 'qposs'],
    size,
    total,
    code,
  );
}

/** lse and D = rowsum(dO * O) per query row [B, nH, Tq], one after the other: what both backward passes read. */
function rowStatsProgram(x: Dims): Program {
  const rows = x.b * x.nH * x.tq;
  const code = `
    fn main(index : i32) {
      if (index >= uniforms.rows) { return; }
      let i = index % uniforms.tq;
      let bh = index / uniforms.tq;
      let base = (((bh / uniforms.nh) * uniforms.tq + i) * uniforms.nh + bh % uniforms.nh) * ${x.d};
      var dot = 0.0;
      for (var t = 0; t < ${x.d}; t++) { dot += dys[base + t] * outs[base + t]; }
      result[index] = lses[index];
      result[uniforms.rows + index] = dot;
    }`;
  return {
    ...program(`rl2FlashAttentionRows_${x.d}`, ['outs', 'lses', 'dys'], 2 * rows, 1, code),
    dispatch: [Math.ceil(rows / WG), 1, 1],
  };
}

/** dQ = scale sum_j dS_ij k_j with P = exp(s - lse), dS = P (dO v^T - D), by query blocks over key tiles. */
function dqProgram(x: Dims, tile: number, total: number): Program {
  const { d } = x;
  const body = `
    for (var jj = 0; jj < uniforms.tile; jj++) {
      if (${OK('jj')}) {
        var s = 0.0;
        var dp = 0.0;
        for (var t = 0; t < ${d}; t++) {
          s += qv[t] * kt[jj * ${d} + t];
          dp += dov[t] * vt[jj * ${d} + t];
        }
        let ds = exp(s - lse) * (dp - dd);
        for (var t = 0; t < ${d}; t++) { dq[t] += ds * kt[jj * ${d} + t]; }
      }
    }`;
  const setup = `
    let lse = stats[row];
    let dd = stats[uniforms.rows + row];
    var dov : array<f32, ${d}>;
    for (var t = 0; t < ${d}; t++) { dov[t] = dys[qbase + t]; }
    var dq : array<f32, ${d}>;`;
  const finish = `for (var t = 0; t < ${d}; t++) { result[qbase + t] = dq[t] * uniforms.scale; }`;
  const code = queryBlockCode(d, tile, setup, body, finish);
  const size = x.b * x.tq * x.nH * d;
  const names = ['qs', 'ks', 'vs', 'segs', 'qposs', 'stats', 'dys'];
  return program(`rl2FlashAttentionDq_${d}_${tile}`, names, size, total, code);
}

/**
 * dK = scale sum_i dS_ij q_i and dV = sum_i P_ij dO_i by key blocks (a thread a key) over the
 * query tiles of each query head of the group: dK [B, nKv, Tk, d] then dV from element `outn`.
 */
function dkvProgram(x: Dims, tile: number, total: number): Program {
  const { d } = x;
  const code = `
    ${PRELUDE}
    var<workgroup> qt : array<f32, ${tile * d}>;
    var<workgroup> gt : array<f32, ${tile * d}>;
    var<workgroup> qat : array<i32, ${tile}>;
    var<workgroup> qseg : array<i32, ${tile}>;
    var<workgroup> qlse : array<f32, ${tile}>;
    var<workgroup> qd : array<f32, ${tile}>;
    fn main(index : i32) {
      ${BLOCK}
      let kvh = bh % uniforms.nkv;
      let b = bh / uniforms.nkv;
      let j = blk * ${WG} + tid;
      let live = slot < uniforms.total && j < uniforms.tk;
      let kvrow = ((b * uniforms.nkv + kvh) * uniforms.tk + min(j, uniforms.tk - 1)) * ${d};
      let segJ = segs[b * uniforms.tk + min(j, uniforms.tk - 1)];
      var kv : array<f32, ${d}>;
      var vv : array<f32, ${d}>;
      for (var t = 0; t < ${d}; t++) { kv[t] = ks[kvrow + t]; vv[t] = vs[kvrow + t]; }
      var dk : array<f32, ${d}>;
      var dv : array<f32, ${d}>;
      let rows = uniforms.rows;
      // without query positions, queries before the block's first key see none of it
      if (tid == 0) { atomicStore(&flag, select(0, blk * ${WG}, uniforms.haspos == 0)); }
      let qstart = agree();
      for (var r = 0; r < uniforms.group; r++) {
        let h = kvh * uniforms.group + r;
        let hrow = (b * uniforms.nh + h) * uniforms.tq;
        for (var i0 = qstart; i0 < uniforms.tq; i0 += ${tile}) {
          workgroupBarrier();
          if (tid == 0) { atomicStore(&flag, 0); }
          for (var e = tid; e < ${tile}; e += ${WG}) {
            let i = min(i0 + e, uniforms.tq - 1);
            var at = i;
            if (uniforms.haspos == 1) { at = qposs[b * uniforms.tq + i]; }
            qat[e] = select(-1, at, i0 + e < uniforms.tq);
            qseg[e] = segs[b * uniforms.tk + at];
            qlse[e] = stats[hrow + i];
            qd[e] = stats[rows + hrow + i];
          }
          workgroupBarrier();
          var mine = false;
          if (live) {
            for (var ii = 0; ii < uniforms.tile; ii++) { if (j <= qat[ii] && qseg[ii] == segJ) { mine = true; break; } }
          }
          if (mine) { atomicStore(&flag, 1); }
          if (agree() == 0) { continue; }
          for (var e = tid; e < ${tile * d}; e += ${WG}) {
            let i = min(i0 + e / ${d}, uniforms.tq - 1);
            let src = ((b * uniforms.tq + i) * uniforms.nh + h) * ${d} + e % ${d};
            qt[e] = qs[src] * uniforms.scale;
            gt[e] = dys[src];
          }
          workgroupBarrier();
          if (live) {
            for (var ii = 0; ii < uniforms.tile; ii++) {
              if (j <= qat[ii] && qseg[ii] == segJ) {
                var s = 0.0;
                var dp = 0.0;
                for (var t = 0; t < ${d}; t++) {
                  s += qt[ii * ${d} + t] * kv[t];
                  dp += gt[ii * ${d} + t] * vv[t];
                }
                let p = exp(s - qlse[ii]);
                let ds = p * (dp - qd[ii]);
                for (var t = 0; t < ${d}; t++) {
                  dv[t] += p * gt[ii * ${d} + t];
                  dk[t] += ds * qt[ii * ${d} + t];
                }
              }
            }
          }
        }
      }
      if (live) {
        for (var t = 0; t < ${d}; t++) {
          result[kvrow + t] = dk[t];
          result[uniforms.outn + kvrow + t] = dv[t];
        }
      }
    }`;
  const names = ['qs', 'ks', 'vs', 'segs', 'qposs', 'stats', 'dys'];
  return program(
    `rl2FlashAttentionDkv_${d}_${tile}`,
    names,
    2 * x.b * x.nKv * x.tk * d,
    total,
    code,
  );
}

/** Block counts and dispatches of the three tiled programs. */
function plan(x: Dims, backend: unknown) {
  const limits = (backend as { device: GPUDevice }).device.limits;
  const tile = tileRows(x.d, limits.maxComputeWorkgroupStorageSize);
  const qBlocks = Math.ceil(x.tq / WG);
  const kBlocks = Math.ceil(x.tk / WG);
  return { tile, qBlocks, qTotal: x.b * x.nH * qBlocks, kBlocks, kTotal: x.b * x.nKv * kBlocks };
}

type Backend = Parameters<KernelFunc>[0]['backend'];

function reshaped(backend: Backend, x: TensorInfo, shape: number[]): TensorInfo {
  return getKernel('Reshape', 'webgpu')!.kernelFunc({
    inputs: { x },
    backend,
    attrs: { shape },
  }) as TensorInfo;
}

/**
 * Runs `p` over `inputs` seen as 1-D tensors (no copy): tfjs keys a pipeline by its inputs'
 * ranks and broadcast dimensions besides the shader key, so flat inputs share one across shapes.
 */
function run(
  backend: Backend,
  p: Program,
  inputs: TensorInfo[],
  uniforms: ReturnType<typeof uniformsOf>,
) {
  const gpu = backend as unknown as WebGpuBackendLike;
  const flat = inputs.map((t) => reshaped(backend, t, [-1]));
  const out = gpu.runWebGPUProgram(p, flat, 'float32', uniforms);
  for (const t of flat) gpu.disposeData(t.dataId);
  return out;
}

/** `shape`'s worth of elements of the 1-D `packed` from `begin` (a copy); `packed` is kept. */
function part(backend: Backend, packed: TensorInfo, begin: number, shape: number[]): TensorInfo {
  const size = shape.reduce((a, c) => a * c, 1);
  const slice = getKernel('Slice', 'webgpu')!.kernelFunc;
  const flat = slice({
    inputs: { x: packed },
    backend,
    attrs: { begin: [begin], size: [size] },
  }) as TensorInfo;
  const out = reshaped(backend, flat, shape);
  (backend as unknown as WebGpuBackendLike).disposeData(flat.dataId);
  return out;
}

const forward: KernelFunc = ({ inputs, backend, attrs }) => {
  const { q, k, v, seg, qpos } = inputs as Record<string, TensorInfo>;
  const x = dimsOf(attrs!);
  const p = plan(x, backend);
  const outn = x.b * x.tq * x.nH * x.d;
  const packed = run(
    backend,
    forwardProgram(x, p.tile, p.qTotal),
    [q!, k!, v!, seg!, qpos!],
    uniformsOf(x, p.tile, p.qBlocks, p.qTotal, outn, attrs!.scale as number),
  );
  const out = [part(backend, packed, 0, q!.shape), part(backend, packed, outn, [x.b, x.nH, x.tq])];
  (backend as unknown as WebGpuBackendLike).disposeData(packed.dataId);
  return out;
};

const backward: KernelFunc = ({ inputs, backend, attrs }) => {
  const { q, k, v, seg, qpos, out, lse, dy } = inputs as Record<string, TensorInfo>;
  const x = dimsOf(attrs!);
  const p = plan(x, backend);
  const gpu = backend as unknown as WebGpuBackendLike;
  const scale = attrs!.scale as number;
  const stats = run(
    backend,
    rowStatsProgram(x),
    [out!, lse!, dy!],
    uniformsOf(x, p.tile, 1, 1, 0, scale),
  );
  const tensors = [q!, k!, v!, seg!, qpos!, stats, dy!];
  const dq = run(
    backend,
    dqProgram(x, p.tile, p.qTotal),
    tensors,
    uniformsOf(x, p.tile, p.qBlocks, p.qTotal, 0, scale),
  );
  const kvSize = x.b * x.nKv * x.tk * x.d;
  const dkv = run(
    backend,
    dkvProgram(x, p.tile, p.kTotal),
    tensors,
    uniformsOf(x, p.tile, p.kBlocks, p.kTotal, kvSize, scale),
  );
  gpu.disposeData(stats.dataId);
  const grads = [
    reshaped(backend, dq, q!.shape),
    part(backend, dkv, 0, k!.shape),
    part(backend, dkv, kvSize, v!.shape),
  ];
  gpu.disposeData(dq.dataId);
  gpu.disposeData(dkv.dataId);
  return grads;
};

/** The WGSL tiled attention kernels (`registerWgslKernels` registers them). */
export const FLASH_ATTENTION_KERNELS: KernelConfig[] = [
  { kernelName: FLASH_ATTENTION, backendName: 'webgpu', kernelFunc: forward },
  { kernelName: FLASH_ATTENTION_GRAD, backendName: 'webgpu', kernelFunc: backward },
];
