import type { Row, RowOrigin } from './row.js';

/** A row paired with where it came from. Readers yield these so that later errors can name the row. */
export interface RowWithOrigin {
  row: Row;
  origin: RowOrigin;
}
