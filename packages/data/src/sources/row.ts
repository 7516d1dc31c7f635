/** One dataset row as read from a file: column name -> plain JS value (strings, numbers, arrays, objects). */
export type Row = Record<string, unknown>;

/** Where a row came from, for error messages: the file and its 1-based row (JSONL/CSV: the line). */
export interface RowOrigin {
  file: string;
  /** 1-based row number within the file (for JSONL and CSV the line number). */
  row: number;
}

/** A row that was skipped instead of failing the load (only with `onBadRow: 'skip'`). */
export interface SkippedRow extends RowOrigin {
  reason: string;
}

/**
 * Counts returned next to every load so that nothing is dropped silently:
 * `rowsRead` rows came back, `rowsSkipped` were skipped (each listed in `skipped`, first 100 kept).
 */
export interface LoadStats {
  files: string[];
  rowsRead: number;
  rowsSkipped: number;
  skipped: SkippedRow[];
}

/** What to do with a row that does not parse: fail the load (default) or count and skip it. */
export type BadRowPolicy = 'error' | 'skip';

/** Fresh, empty stats. */
export function emptyStats(): LoadStats {
  return { files: [], rowsRead: 0, rowsSkipped: 0, skipped: [] };
}

/** Records a skipped row in `stats` (keeps the first 100 reasons, counts all). */
export function recordSkip(stats: LoadStats, skip: SkippedRow): void {
  stats.rowsSkipped += 1;
  if (stats.skipped.length < 100) stats.skipped.push(skip);
}

/** `file row N` for messages. */
export function describeOrigin(origin: RowOrigin): string {
  return `${origin.file} row ${origin.row}`;
}
