// Per-kernel self time (wall and process CPU) of the `native` backend's kernels, per named phase
// (forward, backward, optimizer...), for the training-step profile bench. Off unless started:
// a disabled profile costs one branch per dispatch.
import type { KernelFunc } from '@tensorflow/tfjs-core';

/** Calls and self time of one kernel in one phase (a kernel's time excludes kernels it calls). */
export interface KernelTiming {
  calls: number;
  wallMs: number;
  cpuMs: number;
}

/** What a profile recorded: per phase, its kernels' self time and the phase's own totals. */
export interface KernelProfile {
  /** phase -> kernel name -> timing. */
  kernels: Map<string, Map<string, KernelTiming>>;
  /** phase -> wall and CPU ms between entering and leaving it (kernels and everything else). */
  phases: Map<string, { wallMs: number; cpuMs: number }>;
  /** When each phase was entered (`performance.now()`), to place GC events in their phase. */
  marks: { phase: string; at: number }[];
}

let profile: KernelProfile | undefined;
let phase = 'other';
let entered = { wall: 0, cpu: { user: 0, system: 0 } };
/** Wall and CPU ms of the kernels running inside the current one, per nesting level. */
const nested: { wallMs: number; cpuMs: number }[] = [];

/** Starts recording (clearing any earlier record); the phase is `other` until `setProfilePhase`. */
export function startKernelProfile(): void {
  profile = { kernels: new Map(), phases: new Map(), marks: [] };
  phase = 'other';
  entered = { wall: performance.now(), cpu: process.cpuUsage() };
  profile.marks.push({ phase, at: entered.wall });
}

/** Stops recording and returns what was recorded. */
export function stopKernelProfile(): KernelProfile {
  setProfilePhase('other');
  const done = profile ?? { kernels: new Map(), phases: new Map(), marks: [] };
  profile = undefined;
  return done;
}

/** Kernels dispatched from now on are recorded under `name` (a no-op while no profile records). */
export function setProfilePhase(name: string): void {
  if (!profile) return;
  const wall = performance.now();
  const c = process.cpuUsage(entered.cpu);
  const t = profile.phases.get(phase) ?? { wallMs: 0, cpuMs: 0 };
  t.wallMs += wall - entered.wall;
  t.cpuMs += (c.user + c.system) / 1000;
  profile.phases.set(phase, t);
  phase = name;
  entered = { wall, cpu: process.cpuUsage() };
  profile.marks.push({ phase, at: wall });
}

function record(name: string, wallMs: number, cpuMs: number): void {
  if (!profile) return;
  const byKernel = profile.kernels.get(phase) ?? new Map<string, KernelTiming>();
  profile.kernels.set(phase, byKernel);
  const t = byKernel.get(name) ?? { calls: 0, wallMs: 0, cpuMs: 0 };
  t.calls += 1;
  t.wallMs += wallMs;
  t.cpuMs += cpuMs;
  byKernel.set(name, t);
}

/** Runs `kernelFunc(args)`, timing it under `name` while a profile is recording. */
export function timedCall(
  name: string,
  kernelFunc: KernelFunc,
  args: never,
): ReturnType<KernelFunc> {
  if (!profile) return kernelFunc(args);
  const w0 = performance.now();
  const c0 = process.cpuUsage();
  nested.push({ wallMs: 0, cpuMs: 0 });
  try {
    return kernelFunc(args);
  } finally {
    const wallMs = performance.now() - w0;
    const c = process.cpuUsage(c0);
    const cpuMs = (c.user + c.system) / 1000;
    const inner = nested.pop()!;
    record(name, wallMs - inner.wallMs, cpuMs - inner.cpuMs);
    const outer = nested.at(-1);
    if (outer) {
      outer.wallMs += wallMs;
      outer.cpuMs += cpuMs;
    }
  }
}
