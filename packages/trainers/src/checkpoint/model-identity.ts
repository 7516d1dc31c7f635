import { existsSync, readFileSync, realpathSync, statSync } from 'node:fs';
import { isAbsolute, join } from 'node:path';
import { TrainersError } from '../errors.js';

/**
 * The config.json key of a saved model that names the model its run started from (the
 * `model_name` of its section), as `save_pretrained` records the name it was loaded by.
 */
export const STARTED_FROM_KEY = '_name_or_path';

/** The config.json keys that fix a model's shape: a checkpoint of another value is another model. */
const SHAPE_KEYS = [
  'model_type',
  'hidden_size',
  'intermediate_size',
  'num_hidden_layers',
  'num_attention_heads',
  'num_key_value_heads',
  'head_dim',
  'vocab_size',
] as const;

const isFolder = (path: string) => existsSync(path) && statSync(path).isDirectory();

/** How a checkpoint records `modelName`: a local folder by its absolute path, a hub id as written. */
export function modelIdentity(modelName: string): string {
  return isFolder(modelName) ? realpathSync(modelName) : modelName;
}

function readConfig(dir: string): Record<string, unknown> | undefined {
  try {
    return JSON.parse(readFileSync(join(dir, 'config.json'), 'utf8')) as Record<string, unknown>;
  } catch {
    return undefined; // no config to compare: loading the folder reports it
  }
}

/** `key a -> b` for each shape key the two configs set differently. */
function shapeChanges(
  saved: Record<string, unknown>,
  requested: Record<string, unknown>,
): string[] {
  return SHAPE_KEYS.filter(
    (k) => saved[k] !== undefined && requested[k] !== undefined && saved[k] !== requested[k],
  ).map(
    (k) =>
      `${k} ${JSON.stringify(saved[k])} in the checkpoint, ${JSON.stringify(requested[k])} requested`,
  );
}

/**
 * Checks that the model saved in `savedDir` (a checkpoint's model/ or critic/) is the one `key`
 * (e.g. `actor.model_name`) names now: the model the checkpoint's run started from (recorded
 * by {@link modelIdentity}; a recorded folder that no longer exists is not held against it) and,
 * when `modelName` is a local folder, the shape in its config.json. A resume with another model
 * would train the checkpoint's weights while config.yaml names the other one.
 */
export function checkResumedModel(savedDir: string, modelName: string, key: string): void {
  const saved = readConfig(savedDir);
  if (!saved) return;
  const recorded = saved[STARTED_FROM_KEY];
  const known =
    typeof recorded === 'string' &&
    recorded !== '' &&
    !(isAbsolute(recorded) && !existsSync(recorded));
  const otherModel = known && modelIdentity(recorded) !== modelIdentity(modelName);
  const requested = isFolder(modelName) ? readConfig(modelName) : undefined;
  const changes = requested ? shapeChanges(saved, requested) : [];
  if (!otherModel && changes.length === 0) return;
  const started = known ? ` was trained from ${key}=${recorded}` : ' holds another model';
  throw new TrainersError(
    'CHECKPOINT',
    `trainer.load_ckpt_from: the checkpoint ${savedDir}${started}, but ${key}=${modelName}` +
      (changes.length > 0 ? ` (${changes.join('; ')})` : '') +
      `. To resume that run set ${key}=${known ? recorded : '(the model it was trained from)'}; ` +
      `to train ${modelName}, start a new run with another trainer.save_dir (or trainer.load_ckpt_from=null)`,
  );
}
