/** What loading and tokenizing one split skipped, cut or dropped: printed and logged, never silent. */
export interface SplitCounts {
  /** Rows that did not parse, skipped with `data.on_bad_row=skip`. */
  malformedRows: number;
  /** Rows cut to `data.*.max_length`. */
  truncatedRows: number;
  /** Rows dropped for a sequence over `data.*.max_length` (`over_max_length=drop`). */
  longRowsDropped: number;
  /** SFT sequences with no trained token (no assistant turn, or cut away by max_length). */
  emptySequences: number;
}

export const noCounts = (): SplitCounts => ({
  malformedRows: 0,
  truncatedRows: 0,
  longRowsDropped: 0,
  emptySequences: 0,
});

const METRIC: Record<keyof SplitCounts, string> = {
  malformedRows: 'malformed_rows',
  truncatedRows: 'truncated_rows',
  longRowsDropped: 'long_rows_dropped',
  emptySequences: 'empty_sequences',
};

/** The counts as metrics of step 0 (`data/train/truncated_rows`, ...); undefined when nothing was skipped, cut or dropped. */
export function dataMetrics(counts: {
  readonly [split: string]: SplitCounts;
}): Record<string, number> | undefined {
  const out: Record<string, number> = {};
  for (const [split, c] of Object.entries(counts)) {
    for (const [k, name] of Object.entries(METRIC))
      out[`data/${split}/${name}`] = c[k as keyof SplitCounts];
  }
  return Object.values(out).some((v) => v > 0) ? out : undefined;
}

/** One line per split with something skipped, cut or dropped, naming the keys involved; empty when nothing was. */
export function describeCounts(
  counts: { readonly [split: string]: SplitCounts },
  maxLength: (split: string) => number | null,
): string[] {
  const lines: string[] = [];
  for (const [split, c] of Object.entries(counts)) {
    const parts = [
      c.malformedRows ? `skipped ${c.malformedRows} malformed row(s) (data.on_bad_row=skip)` : '',
      c.truncatedRows
        ? `truncated ${c.truncatedRows} row(s) to data.${split}.max_length=${maxLength(split)} tokens`
        : '',
      c.longRowsDropped
        ? `dropped ${c.longRowsDropped} row(s) longer than ` +
          `data.${split}.max_length=${maxLength(split)} (data.${split}.over_max_length=drop)`
        : '',
      c.emptySequences
        ? `skipped ${c.emptySequences} sequence(s) with no trained token left (no assistant turn, or cut by data.${split}.max_length)`
        : '',
    ].filter(Boolean);
    if (parts.length > 0) lines.push(`data.${split}: ${parts.join('; ')}`);
  }
  return lines;
}
