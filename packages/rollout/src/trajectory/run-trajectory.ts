import type { GenerateResult, RolloutEngine, SamplingParams } from '../inference/rollout-engine.js';
import type { Environment, RolloutPrompt } from '../env/environment.js';
import { sleep } from '../inference/backoff.js';
import { RolloutError } from '../errors.js';
import type { RolloutTokenizer } from './rollout-tokenizer.js';
import type { Trajectory, TurnRecord } from './trajectory.js';
import { TrajectoryAssembler } from './trajectory-assembler.js';

export interface TrajectoryOptions {
  engine: RolloutEngine;
  env: Environment;
  tokenizer: RolloutTokenizer;
  sampling: SamplingParams;
  /** Turns before the trajectory is closed even if the env is not done. Default 1. */
  maxTurns?: number;
  /**
   * Longest sequence (prompt + actions + env tokens) allowed: max_new_tokens is capped to the
   * room left, and a trajectory ends (the turn's `next` is 'max_length') when the next state
   * would leave no room for another generated token. Default: no limit.
   */
  maxSequenceTokens?: number;
  /** Seed of turn t is seed + t (undefined: the engine's own randomness). */
  seed?: number;
  /** Cancels the trajectory: it rejects with ENGINE_ABORTED. */
  signal?: AbortSignal;
  /** How often one turn may be resumed after an 'abort' (a pause for partial rollout). Default 64. */
  maxResumes?: number;
}

/**
 * Runs one response to one prompt, turn by turn (RL2's rollout):
 * generate from the current sequence's ids, decode the action, call env.step(state, action,
 * answer), put the reward on the action's last token; then if done (or maxTurns reached)
 * stop; else if nextState starts with state + action, encode only the new suffix and append it
 * with mask 0; else start a new sequence from nextState.
 * An 'abort' finish (engine paused for partial rollout) keeps the partial tokens and resumes
 * the same turn once the engine continues.
 * Env and engine failures do not throw: the trajectory comes back with `error` set.
 * Only cancellation through `signal` rejects.
 */
export async function runTrajectory(
  prompt: RolloutPrompt,
  ids: { promptId: number; sampleId: number },
  options: TrajectoryOptions,
): Promise<Trajectory> {
  const { engine, env, tokenizer, sampling, signal } = options;
  const maxTurns = options.maxTurns ?? 1;
  if (!Number.isInteger(maxTurns) || maxTurns < 1) {
    throw new RolloutError(
      'INVALID_ARGUMENT',
      `rollout.max_turns must be an integer >= 1, got ${maxTurns}`,
    );
  }
  const turns: TurnRecord[] = [];
  const trajectory: Trajectory = {
    ...ids,
    prompt: prompt.prompt,
    answer: prompt.answer,
    sequences: [],
    turns,
    reward: 0,
  };
  let assembler: TrajectoryAssembler | undefined;
  try {
    const start = await env.reset(prompt);
    trajectory.answer = start.answer;
    let state = start.state;
    assembler = new TrajectoryAssembler(tokenizer.encode(state));
    const limit = options.maxSequenceTokens ?? Number.POSITIVE_INFINITY;
    for (let turn = 1; turn <= maxTurns; turn += 1) {
      const room = limit - assembler.inputIds().length;
      if (room < 1) {
        throw new RolloutError(
          'INVALID_ARGUMENT',
          `the prompt has ${assembler.inputIds().length} tokens, no room under maxSequenceTokens = ${limit}`,
        );
      }
      const seed = options.seed === undefined ? sampling.sampling_seed : options.seed + turn - 1;
      const maxNew = Number.isFinite(room)
        ? Math.min(sampling.max_new_tokens ?? room, room)
        : sampling.max_new_tokens;
      const out = await generateTurn(
        engine,
        assembler.inputIds(),
        { ...sampling, max_new_tokens: maxNew, sampling_seed: seed },
        options.maxResumes ?? 64,
        signal,
      );
      assembler.appendAction(out.tokenIds, out.logprobs);
      const action = tokenizer.decode(out.tokenIds);
      const step = await env.step(state, action, trajectory.answer);
      assembler.setTurnReward(step.reward);
      trajectory.reward += step.reward;
      const record: TurnRecord = {
        state,
        action,
        reward: step.reward,
        finishReason: out.finishReason,
        actionTokens: out.tokenIds.length,
        next: 'done',
      };
      turns.push(record);
      if (step.done || step.nextState === null) break;
      if (turn === maxTurns) {
        record.next = 'max_turns';
        break;
      }
      const prefix = state + action;
      const merge = step.nextState.startsWith(prefix);
      const ids = tokenizer.encode(merge ? step.nextState.slice(prefix.length) : step.nextState);
      if ((merge ? assembler.inputIds().length : 0) + ids.length >= limit) {
        record.next = 'max_length'; // no room for another action in this sequence
        break;
      }
      if (merge) assembler.appendObservation(ids);
      else assembler.startSequence(ids);
      record.next = merge ? 'merge' : 'split';
      state = step.nextState;
    }
  } catch (e) {
    if (signal?.aborted) throw e;
    trajectory.error = {
      code: e instanceof RolloutError ? e.code : 'ENV_STEP',
      message: (e as Error)?.message ?? String(e),
    };
  }
  trajectory.sequences = assembler ? assembler.finish() : [];
  return trajectory;
}

/** One turn's generation, resumed after 'abort' finishes until it stops or hits max_new_tokens. */
async function generateTurn(
  engine: RolloutEngine,
  inputIds: number[],
  sampling: SamplingParams,
  maxResumes: number,
  signal?: AbortSignal,
): Promise<GenerateResult> {
  const budget = sampling.max_new_tokens;
  if (budget !== undefined && (!Number.isInteger(budget) || budget < 1)) {
    throw new RolloutError(
      'INVALID_ARGUMENT',
      `sampling max_new_tokens must be an integer >= 1, got ${budget}`,
    );
  }
  const tokenIds: number[] = [];
  const logprobs: number[] = [];
  for (let resumes = 0; ; resumes += 1) {
    const left = budget === undefined ? undefined : budget - tokenIds.length;
    const out = await engine
      .generate({
        inputIds: [...inputIds, ...tokenIds],
        sampling: { ...sampling, max_new_tokens: left },
        signal,
      })
      .catch((e: unknown) => {
        if (e instanceof RolloutError || signal?.aborted) throw e;
        throw new RolloutError(
          'ENGINE_FAILED',
          `the engine failed to generate: ${(e as Error)?.message ?? String(e)}`,
          { cause: e },
        );
      });
    tokenIds.push(...out.tokenIds);
    logprobs.push(...out.logprobs);
    if (out.finishReason !== 'abort') return { tokenIds, logprobs, finishReason: out.finishReason };
    if (left !== undefined && tokenIds.length >= budget!)
      return { tokenIds, logprobs, finishReason: 'length' };
    if (resumes >= maxResumes) {
      throw new RolloutError(
        'ENGINE_ABORTED',
        `a turn was aborted ${resumes + 1} times by the engine (paused and never continued?)`,
      );
    }
    // An abort with no progress means the engine is still paused: wait a little before asking again.
    if (out.tokenIds.length === 0) await sleep(Math.min(1000, 10 * 2 ** resumes), signal);
  }
}
