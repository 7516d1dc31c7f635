// Whether this machine can have a hardware GPU at all, asked before Dawn is loaded: `auto` then
// costs nothing (and prints nothing) on machines without one, such as CI's.
import { existsSync, readdirSync } from 'node:fs';

/**
 * On Linux a GPU a process can use shows as a device node: /dev/nvidia0 (NVIDIA's driver) or a
 * DRM render node /dev/dri/renderD* (Mesa's AMD/Intel drivers, NVIDIA's too). Other platforms
 * are assumed to have one (Dawn then decides).
 */
export function mayHaveGpu(): boolean {
  if (process.platform !== 'linux') return true;
  if (existsSync('/dev/nvidia0')) return true;
  try {
    return readdirSync('/dev/dri').some((name) => name.startsWith('renderD'));
  } catch {
    return false;
  }
}
