import { parse } from 'yaml';
import { TrainersError } from '../errors.js';

/** A dotted command-line override, e.g. `actor.lr=1e-6`. */
export interface Override {
  readonly key: string;
  readonly raw: string;
}

/** Splits `key=value` at the first `=`; anything else is an error naming the argument. */
export function splitOverride(arg: string): Override {
  const eq = arg.indexOf('=');
  if (eq <= 0) {
    throw new TrainersError(
      'CONFIG_INVALID_VALUE',
      `command-line argument "${arg}" is not key=value (write e.g. actor.lr=1e-6 or trainer.n_epochs=2)`,
    );
  }
  return { key: arg.slice(0, eq).trim(), raw: arg.slice(eq + 1) };
}

/**
 * Coerces the text of an override by the type of its leaf: string leaves keep the text as
 * is (so `trainer.experiment_name=007` stays a string), `null`/`~` mean null; every other
 * leaf is read as a YAML 1.2 scalar or flow collection (`1e-6`, `true`, `[0.9, 0.95]`).
 */
export function coerceOverride(raw: string, type: string): unknown {
  const text = raw.trim();
  const nullable = type.endsWith('| null');
  if (nullable && (text === 'null' || text === '~' || text === '')) return null;
  if (type.startsWith('string')) return text.replace(/^(["'])(.*)\1$/, '$2');
  try {
    return parse(text);
  } catch {
    return text;
  }
}
