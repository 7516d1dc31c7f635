import { RolloutError } from '../errors.js';
import type { TrajectorySequence } from './trajectory.js';

/**
 * Builds a trajectory's sequences turn by turn, as RL2's rollout does (no I/O, no text):
 * - `appendAction`: generated ids go on the current sequence with mask 1 and their logprobs.
 * - `setTurnReward`: the reward goes on the last generated token of the turn.
 * - `appendObservation`: env tokens that extend the current sequence (prefix merge), mask 0.
 * - `startSequence`: closes the current sequence and opens a new one (the next state did not
 *   extend state + action, e.g. a template that rewrites history).
 * `inputIds()` is what the engine must continue next.
 */
export class TrajectoryAssembler {
  private readonly done: TrajectorySequence[] = [];
  private current: TrajectorySequence;
  private lastActionIndex = -1;

  constructor(promptIds: number[]) {
    this.current = TrajectoryAssembler.open(promptIds);
  }

  inputIds(): number[] {
    return this.current.tokenIds;
  }

  appendAction(tokenIds: number[], logprobs: number[]): void {
    if (tokenIds.length !== logprobs.length) {
      throw new RolloutError(
        'INVALID_ARGUMENT',
        `action has ${tokenIds.length} token ids but ${logprobs.length} logprobs`,
      );
    }
    const s = this.current;
    for (let i = 0; i < tokenIds.length; i += 1) {
      s.tokenIds.push(tokenIds[i]);
      s.actionMask.push(1);
      s.logprobs.push(logprobs[i]);
      s.rewards.push(0);
    }
    if (tokenIds.length > 0) this.lastActionIndex = s.tokenIds.length - 1;
  }

  /** Puts `reward` on the last generated token of the current sequence. */
  setTurnReward(reward: number): void {
    if (this.lastActionIndex < 0) {
      throw new RolloutError(
        'INVALID_ARGUMENT',
        'no generated token to put the reward on: the engine returned an empty action (check max_new_tokens >= 1)',
      );
    }
    this.current.rewards[this.lastActionIndex] += reward;
  }

  appendObservation(tokenIds: number[]): void {
    const s = this.current;
    for (const t of tokenIds) {
      s.tokenIds.push(t);
      s.actionMask.push(0);
      s.logprobs.push(0);
      s.rewards.push(0);
    }
  }

  startSequence(promptIds: number[]): void {
    this.done.push(this.current);
    this.current = TrajectoryAssembler.open(promptIds);
    this.lastActionIndex = -1;
  }

  /** The sequences holding at least one generated token, in order (the current one last). */
  finish(): TrajectorySequence[] {
    return [...this.done, this.current].filter((s) => s.actionMask.includes(1));
  }

  private static open(promptIds: number[]): TrajectorySequence {
    const n = promptIds.length;
    return {
      tokenIds: [...promptIds],
      actionMask: Array(n).fill(0),
      logprobs: Array(n).fill(0),
      rewards: Array(n).fill(0),
    };
  }
}
