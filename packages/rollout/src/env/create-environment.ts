import { RolloutError } from '../errors.js';
import type {
  EnvModule,
  EnvStep,
  EnvStepOutput,
  Environment,
  RolloutPrompt,
} from './environment.js';
import { withTimeout } from './with-timeout.js';

export interface EnvironmentOptions {
  /** Limit on one `step` or `reset` call, ms. Default 60000; 0 disables it. */
  timeoutMs?: number;
  /** Named in error messages. Default 'env'. */
  source?: string;
}

/**
 * Wraps an env module (loaded from a file or written inline) into an Environment: validates
 * what `step`/`reset` return, turns throws into ENV_STEP errors and hangs into ENV_TIMEOUT.
 */
export function createEnvironment(
  module: EnvModule,
  options: EnvironmentOptions = {},
): Environment {
  const source = options.source ?? 'env';
  const timeoutMs = options.timeoutMs ?? 60_000;
  if (typeof module?.step !== 'function') {
    throw new RolloutError(
      'ENV_LOAD',
      `${source} does not export a step function: export async function step(state, action, answer) { return [nextState, reward, done]; }`,
    );
  }

  async function call<T>(name: string, run: () => T | Promise<T>): Promise<T> {
    try {
      return await withTimeout(Promise.resolve().then(run), timeoutMs, `${source} ${name}()`);
    } catch (e) {
      if (e instanceof RolloutError) throw e;
      throw new RolloutError(
        'ENV_STEP',
        `${source} ${name}() threw: ${(e as Error)?.message ?? String(e)}`,
        { cause: e },
      );
    }
  }

  return {
    source,
    async step(state, action, answer): Promise<EnvStep> {
      const out = await call('step', () => module.step(state, action, answer));
      return normaliseStep(out, source);
    },
    async reset(prompt: RolloutPrompt) {
      const reset = module.reset;
      if (!reset) return { state: prompt.prompt, answer: prompt.answer };
      const out = await call('reset', () => reset.call(module, prompt));
      if (typeof out === 'string') return { state: out, answer: prompt.answer };
      if (out && typeof out === 'object' && typeof out.state === 'string') {
        return { state: out.state, answer: 'answer' in out ? out.answer : prompt.answer };
      }
      throw new RolloutError(
        'ENV_STEP',
        `${source} reset() must return a string or {state, answer}, got ${preview(out)}`,
      );
    },
  };
}

function normaliseStep(out: EnvStepOutput, source: string): EnvStep {
  let nextState: unknown;
  let reward: unknown;
  let done: unknown;
  if (Array.isArray(out)) {
    [nextState, reward, done] = out;
  } else if (out && typeof out === 'object') {
    nextState = 'nextState' in out ? out.nextState : out.next_state;
    reward = out.reward;
    done = out.done;
  } else {
    throw new RolloutError(
      'ENV_STEP',
      `${source} step() must return [nextState, reward, done] or {nextState, reward, done}, got ${preview(out)}`,
    );
  }
  if (typeof reward === 'boolean') reward = reward ? 1 : 0;
  if (typeof reward !== 'number' || !Number.isFinite(reward)) {
    throw new RolloutError(
      'ENV_STEP',
      `${source} step() returned reward ${preview(reward)}: it must be a finite number`,
    );
  }
  if (typeof done !== 'boolean') {
    throw new RolloutError(
      'ENV_STEP',
      `${source} step() returned done ${preview(done)}: it must be true or false`,
    );
  }
  if (!done && typeof nextState !== 'string') {
    throw new RolloutError(
      'ENV_STEP',
      `${source} step() returned done=false with nextState ${preview(nextState)}: give the next prompt text or set done=true`,
    );
  }
  return { nextState: typeof nextState === 'string' ? nextState : null, reward, done };
}

function preview(x: unknown): string {
  if (typeof x === 'number') return String(x);
  const s = JSON.stringify(x);
  return s === undefined ? String(x) : s.length > 80 ? `${s.slice(0, 80)}...` : s;
}
