import type { ProcessGroup } from '../comm/collective.js';
import type { DeviceMesh, MeshAxis } from './device-mesh.js';

/** One process group per mesh axis (every rank creates all five, named by axis). */
export function createMeshGroups(
  world: ProcessGroup,
  mesh: DeviceMesh,
): Record<MeshAxis, ProcessGroup> {
  const axes: MeshAxis[] = ['ddp', 'fsdp', 'tp', 'dp', 'cp'];
  return Object.fromEntries(axes.map((a) => [a, world.subgroup(mesh.groups[a], a)])) as Record<
    MeshAxis,
    ProcessGroup
  >;
}
