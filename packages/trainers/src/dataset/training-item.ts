/**
 * One packed-able training sequence: model inputs and per-position targets/masks, length T.
 * SFT/DPO: `targets` are the next tokens (RL2's actions) and `lossMask` the action mask.
 * RM: `targets` are unused and `lossMask` marks the last token, where the reward is read.
 */
export interface TrainingSequence {
  readonly inputIds: readonly number[];
  readonly positionIds: readonly number[];
  readonly targets: readonly number[];
  readonly lossMask: readonly number[];
}

/**
 * What one dataset row becomes: 1 sequence (SFT text), several (multi-turn SFT whose template
 * rewrites history), or a (chosen, rejected) pair that packing keeps together.
 */
export interface TrainingItem {
  readonly sequences: readonly TrainingSequence[];
  /** `file row N` of the source row, for error messages. */
  readonly origin: string;
}
