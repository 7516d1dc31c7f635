import type { SftConfig } from './sft-config.js';

/** `trainer.*` after validation (identical for SFT, RM and DPO). */
export type TrainerSection = SftConfig['trainer'];

/** Model + optimizer knobs shared by `actor.*` and `critic.*`. */
export type ModelSection = Omit<SftConfig['actor'], 'avg_level'>;
