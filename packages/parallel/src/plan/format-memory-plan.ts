import type { MemoryPlan } from './plan-memory.js';

function gib(b: number): string {
  return `${(b / 2 ** 30).toFixed(2)} GiB`;
}

/** Human-readable table of a {@link MemoryPlan}, for `rl2 plan`. */
export function formatMemoryPlan(plan: MemoryPlan, deviceBytes?: number): string {
  const { layout: l, bytes: b } = plan;
  const rows: [string, number][] = [
    ['parameters', b.parameters],
    ['gradients', b.gradients],
    ['optimizer state', b.optimizerState],
    ['gathered layers (fsdp)', b.gatheredLayers],
    ['activations', b.activations],
    [
      plan.attention === 'scores'
        ? 'attention scores'
        : l.cp > 1
          ? 'attention (tiled, lse + row K/V)'
          : 'attention (tiled, lse)',
      b.attentionScores,
    ],
    ['logits', b.logits],
  ];
  const width = Math.max(...rows.map(([k]) => k.length), 'total per device'.length);
  const lines = [
    `model: ${(plan.parameters.total / 1e9).toFixed(2)}B parameters; ${plan.paramsPerDevice.toLocaleString('en-US')} stored per device`,
    `layout: ${l.gpus} devices = ddp ${l.ddp} x fsdp ${l.fsdp} x tp ${l.tp} (model), dp ${l.dp} x cp ${l.cp} x tp ${l.tp} (data)`,
    ...rows.map(([k, v]) => `  ${k.padEnd(width)}  ${gib(v).padStart(12)}`),
    `  ${'total per device'.padEnd(width)}  ${gib(b.total).padStart(12)}`,
  ];
  if (deviceBytes !== undefined) {
    const [largest] = rows.reduce((m, r) => (r[1] > m[1] ? r : m));
    const hint =
      largest === 'attention scores'
        ? 'attention scores dominate: plan tiled attention (the native backend), or lower max_length_per_device or cp'
        : 'raise tp or the number of devices, or lower max_length_per_device';
    lines.push(
      b.total <= deviceBytes
        ? `fits in ${gib(deviceBytes)}`
        : `does NOT fit in ${gib(deviceBytes)}: ${hint}`,
    );
  }
  return lines.join('\n');
}
