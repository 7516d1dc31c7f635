import type { z } from 'zod';
import { configLeaves } from './config-leaves.js';

/**
 * The config tree as `--help` prints it: one line per leaf with its default and doc,
 * grouped under section headers, e.g.
 * `  lr = 1e-05  (number)  peak learning rate of AdamW`.
 */
export function formatConfigHelp(schema: z.ZodType): string {
  const lines: string[] = [];
  let section = '';
  const leaves = configLeaves(schema);
  const width = Math.max(...leaves.map((l) => l.key.length)) + 2;
  for (const leaf of leaves) {
    const parent = leaf.key.slice(0, leaf.key.lastIndexOf('.'));
    if (parent !== section) {
      section = parent;
      lines.push(`${section}:`);
    }
    const value = JSON.stringify(leaf.default) ?? 'null';
    lines.push(
      `  ${leaf.key.padEnd(width)} = ${value.padEnd(34)} ${leaf.description} (${leaf.type})`,
    );
  }
  return lines.join('\n');
}
