import type { TrainerSection } from '../config/sections.js';
import { TrainersError } from '../errors.js';
import type { MetricRecord } from '../metrics/metrics-log.js';
import type { ProgressUpdate } from '../metrics/progress.js';
import type { RunSession } from './run-session.js';

/** What one step of a trainer did, for the loop to record and act on. */
export interface LoopStep {
  /** Its metrics, recorded at its number. */
  readonly values: Record<string, number>;
  /** What the progress display shows. */
  readonly shown: Omit<ProgressUpdate, 'step'>;
  /**
   * The loss and gradient norm of each update it made, under their metric keys
   * (`train/loss`, `actor/grad_norm`, ...): trainer.on_nonfinite watches these. A NaN/Inf one
   * means that update was not applied (see `layoutStep`).
   */
  readonly watched: Record<string, number>;
  /** The stop flags the step's own all-reduce summed over the world, when it carried them. */
  readonly stopFlag?: number;
}

/** A trainer's part of the loop: its step, evaluation and checkpoint. */
export interface StepLoop {
  readonly session: RunSession;
  readonly trainer: Pick<TrainerSection, 'test_freq' | 'save_freq' | 'on_nonfinite'>;
  /** Before the first step of a fresh run (e.g. validation). */
  readonly beforeFirstStep?: () => Promise<void>;
  readonly step: () => Promise<LoopStep>;
  readonly evaluate: () => Promise<void>;
  /** After the last step (default: `evaluate`). */
  readonly evaluateAtEnd?: () => Promise<void>;
  readonly save: () => Promise<void>;
}

/**
 * The run loop every trainer shares (RL2's `for step in trange(...)`): step, record, evaluate
 * every trainer.test_freq steps, save every trainer.save_freq steps, stop after the step that
 * an interrupt arrived in (with a checkpoint); at the end evaluate and save. A step with a
 * NaN/Inf loss or gradient norm stops the run (trainer.on_nonfinite=stop: nothing more is
 * saved, `latest` stays on the last checkpoint) or is counted in `train/nonfinite_skips` and
 * passed over (skip). Returns the metrics of every step it ran.
 */
export async function runSteps(loop: StepLoop): Promise<MetricRecord[]> {
  const { session, trainer } = loop;
  const steps: MetricRecord[] = [];
  let skips = 0;
  if (!session.resumeFrom) await loop.beforeFirstStep?.();
  while (session.step < session.totalSteps) {
    // A step is synchronous tensor work: yield to the event loop between steps so that Ctrl-C
    // (a signal handler) and pending I/O run, and the stop check below sees the interrupt.
    await new Promise<void>((next) => setImmediate(next));
    const done = await loop.step();
    const bad = Object.entries(done.watched).filter(([, v]) => !Number.isFinite(v));
    if (bad.length > 0) skips += 1;
    const values = skips > 0 ? { ...done.values, 'train/nonfinite_skips': skips } : done.values;
    steps.push(session.completeStep(values, done.shown));
    if (bad.length > 0 && trainer.on_nonfinite === 'stop') throw nonFinite(session, bad);
    if (bad.length > 0)
      session.say(`${describeBad(session.step, bad)}: update skipped (${skips} so far)`);
    if (session.due(trainer.test_freq)) await loop.evaluate();
    if (session.due(trainer.save_freq)) await loop.save();
    if (session.stopRequested(done.stopFlag)) {
      await session.interrupt(loop.save);
      break;
    }
  }
  if (!session.interrupted) {
    await (loop.evaluateAtEnd ?? loop.evaluate)();
    await loop.save();
  }
  return steps;
}

const describeBad = (step: number, bad: readonly [string, number][]) =>
  `step ${step}: ${bad.map(([k, v]) => `${k} is ${v}`).join(', ')}`;

function nonFinite(session: RunSession, bad: readonly [string, number][]): TrainersError {
  const kept = session.checkpoint
    ? `latest stays on ${session.checkpoint}`
    : 'no checkpoint was saved yet';
  return new TrainersError(
    'NON_FINITE',
    `${describeBad(session.step, bad)}; its update was not applied and the run stops ` +
      `(trainer.on_nonfinite=stop), ${kept}. Lower the learning rate (actor.lr, or critic.lr ` +
      'for critic/* and rl2 rm) and resume with trainer.load_ckpt_from=latest; or set ' +
      'trainer.on_nonfinite=skip to pass over such steps.',
  );
}
