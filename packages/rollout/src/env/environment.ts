/** One prompt of the rollout: the text the model sees first and what the env checks against. */
export interface RolloutPrompt {
  /** Prompt text, chat template already applied (the state of turn 1). */
  prompt: string;
  /** Passed as the third argument of `step` (RL2's `answer`; the whole row works too). */
  answer?: unknown;
  /** The whole data row, for envs whose `reset` needs more than the answer. */
  row?: Record<string, unknown>;
}

/** The result of one env step, normalised. `nextState` is null when done. */
export interface EnvStep {
  nextState: string | null;
  reward: number;
  done: boolean;
}

/** What an env module's `step` may return: RL2's tuple, or an object (snake_case accepted). */
export type EnvStepOutput =
  | [nextState: string | null | undefined, reward: number, done: boolean]
  | { nextState?: string | null; next_state?: string | null; reward: number; done: boolean };

/** What an env module's optional `reset` may return: the first state, or the state and a new answer. */
export type EnvResetOutput = string | { state: string; answer?: unknown };

/**
 * The module a user points `rollout.env_path` at (.ts, .js or .mjs). README form:
 * `export async function step(state, action, answer) { return [nextState, reward, done]; }`.
 * `state` is the text the model saw this turn, `action` the text it generated. When
 * `nextState` starts with state + action the turns share one sequence; else a new one starts.
 */
export interface EnvModule {
  step(state: string, action: string, answer: unknown): EnvStepOutput | Promise<EnvStepOutput>;
  reset?(prompt: RolloutPrompt): EnvResetOutput | Promise<EnvResetOutput>;
}

/** A loaded environment with normalised outputs and timeouts applied. */
export interface Environment {
  /** Where it was loaded from (for error messages). */
  source: string;
  step(state: string, action: string, answer: unknown): Promise<EnvStep>;
  /** The first state and answer of a prompt (the prompt itself when the module has no reset). */
  reset(prompt: RolloutPrompt): Promise<{ state: string; answer: unknown }>;
  /** Stops what runs the env (the worker threads of `loadEnvironment`); absent for in-thread envs. */
  close?(): Promise<void>;
}
