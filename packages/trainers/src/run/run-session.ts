import { mkdirSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { updateLink } from '@rl2/models';
import { stringify } from 'yaml';
import { checkpointDirName } from '../checkpoint/resolve-checkpoint.js';
import type { TrainerSection } from '../config/sections.js';
import { type MetricRecord, MetricsLog } from '../metrics/metrics-log.js';
import { type Progress, type ProgressUpdate, createProgress } from '../metrics/progress.js';
import { TensorBoardWriter } from '../metrics/tensorboard-writer.js';
import type { DataParallel } from '../parallel-model/data-parallel.js';
import { writeReport } from '../report/write-report.js';
import { releaseSaveDir } from './save-dir-lock.js';
import { writeFailure } from './write-failure.js';

/** Where a run writes and how it can be stopped; all optional. */
export interface RunIo {
  /** Progress and log lines (default process.stdout). */
  readonly stdout?: NodeJS.WriteStream;
  /** Aborting it (Ctrl-C in the CLI) saves a checkpoint after the current step and returns. */
  readonly signal?: AbortSignal;
  /** Called after every optimizer step with its metrics. */
  readonly onStep?: (record: MetricRecord) => void;
}

/** What every finished or interrupted run reports. */
export interface SessionResult {
  /** Optimizer steps done in total (including those before a resume). */
  readonly step: number;
  readonly totalSteps: number;
  readonly interrupted: boolean;
  readonly saveDir: string;
  /** The last checkpoint written (step-N directory). */
  readonly checkpoint: string;
  readonly report?: string;
}

/** What a session is opened with. */
export interface RunSessionOptions {
  readonly trainer: Pick<
    TrainerSection,
    'save_dir' | 'load_ckpt_from' | 'use_tensorboard' | 'report' | 'progress' | 'log_freq'
  >;
  /** The resolved config, written to save_dir/config.yaml. */
  readonly config: unknown;
  readonly io: RunIo;
  /** The ranks of the run: world rank 0 alone writes; an interrupt on any rank stops all. */
  readonly world: DataParallel;
  readonly totalSteps: number;
  /** Checkpoint the run resumes from (already resolved), and the step it was saved at. */
  readonly resumeFrom?: string;
  readonly step?: number;
}

/** Progress of ranks other than 0: they train silently. */
const SILENT: Progress = { update: () => {}, log: () => {}, stop: () => {} };

/**
 * What every trainer does around its own steps (SFT, RM, DPO and PPO alike): the run folder
 * (config.yaml), metrics.jsonl (cut back to the resumed step), TensorBoard events, the progress
 * display, numbered checkpoints with the `latest` link, interrupts (Ctrl-C on any rank stops
 * every rank after the step, with a checkpoint) and the HTML report at the end. World rank 0
 * alone writes; every rank calls every method in the same order (saves and stops are
 * collectives).
 */
export class RunSession {
  /** Optimizer steps done (including those before a resume). */
  step: number;
  /** The last checkpoint written, or the one resumed from. */
  checkpoint: string;
  interrupted = false;
  /** Every evaluation recorded by `test`, in order. */
  readonly tests: MetricRecord[] = [];
  readonly isMain: boolean;
  private readonly metrics?: MetricsLog;
  private readonly tensorboard?: TensorBoardWriter;
  private readonly progress: Progress;
  private savedAt: number;
  private testedAt = -1;

  constructor(private readonly o: RunSessionOptions) {
    const { trainer } = o;
    this.step = o.step ?? 0;
    this.checkpoint = o.resumeFrom ?? '';
    this.savedAt = o.resumeFrom ? this.step : -1;
    this.isMain = o.world.rank === 0;
    if (this.isMain) {
      const configFile = join(trainer.save_dir, 'config.yaml');
      try {
        mkdirSync(trainer.save_dir, { recursive: true });
        writeFileSync(configFile, stringify(o.config));
      } catch (err) {
        throw writeFailure(err, 'the run config', configFile);
      }
      this.metrics = new MetricsLog(join(trainer.save_dir, 'metrics.jsonl'));
      this.metrics.truncateAfter(o.resumeFrom ? this.step : -1);
      if (trainer.use_tensorboard)
        this.tensorboard = new TensorBoardWriter(join(trainer.save_dir, 'tensorboard'));
    }
    this.progress = this.isMain
      ? createProgress({
          total: o.totalSteps,
          start: this.step,
          mode: trainer.progress,
          logFreq: trainer.log_freq,
          stream: this.out,
        })
      : SILENT;
  }

  get totalSteps(): number {
    return this.o.totalSteps;
  }

  get resumeFrom(): string | undefined {
    return this.o.resumeFrom;
  }

  /** Where progress and messages go. */
  get out(): NodeJS.WriteStream {
    return this.o.io.stdout ?? process.stdout;
  }

  /** A line that does not garble the progress bar (rank 0 only). */
  say(line: string): void {
    this.progress.log(line);
  }

  /** Appends `values` at the current step to metrics.jsonl and TensorBoard. */
  record(values: Record<string, number>): MetricRecord {
    const rec = { step: this.step, time: Date.now() / 1000, ...values } as MetricRecord;
    try {
      this.metrics?.append(rec);
    } catch (err) {
      throw writeFailure(err, 'metrics', this.metrics?.file ?? '');
    }
    this.tensorboard?.addScalars(this.step, values);
    return rec;
  }

  /** Counts an optimizer step: records its metrics, moves the progress display, calls `io.onStep`. */
  completeStep(values: Record<string, number>, shown: Omit<ProgressUpdate, 'step'>): MetricRecord {
    this.step += 1;
    const rec = this.record(values);
    this.progress.update({ step: this.step, ...shown });
    this.o.io.onStep?.(rec);
    return rec;
  }

  /** True every `freq` steps (never when `freq` is null). */
  due(freq: number | null): boolean {
    return freq !== null && freq > 0 && this.step % freq === 0;
  }

  /** Runs an evaluation at most once per step, records its (already prefixed) values and prints its line. */
  async test(
    evaluate: () =>
      | Promise<{ values: Record<string, number>; line: string } | undefined>
      | { values: Record<string, number>; line: string }
      | undefined,
  ): Promise<void> {
    if (this.testedAt === this.step) return;
    this.testedAt = this.step;
    const res = await evaluate();
    if (!res) return;
    this.tests.push(this.record(res.values));
    this.say(res.line);
  }

  /**
   * Saves the checkpoint of the current step (at most once per step): `write(dir)` runs on every
   * rank (gathering sharded state is a collective) and writes on rank 0, which then points
   * `latest` at it.
   */
  async save(write: (dir: string) => Promise<void>): Promise<void> {
    if (this.savedAt === this.step) return;
    this.savedAt = this.step;
    const { save_dir: saveDir } = this.o.trainer;
    this.checkpoint = join(saveDir, checkpointDirName(this.step));
    try {
      await write(this.checkpoint);
      if (!this.isMain) return;
      updateLink(saveDir, 'latest', checkpointDirName(this.step));
    } catch (err) {
      throw writeFailure(err, 'checkpoint', this.checkpoint);
    }
    this.say(`saved checkpoint ${this.checkpoint}`);
  }

  /** 1 when this rank was asked to stop (the flag a step's all-reduce can carry), else 0. */
  get stopFlag(): number {
    return this.o.io.signal?.aborted ? 1 : 0;
  }

  /**
   * After a step: true when any rank was asked to stop. `summed` is `stopFlag` already summed
   * over the world by the step's own all-reduce; without it the ranks sum it here.
   */
  stopRequested(summed?: number): boolean {
    const { world } = this.o;
    if (world.size === 1) return this.stopFlag > 0;
    return (summed ?? (world.allReduceSum(Float32Array.of(this.stopFlag))[0] as number)) > 0;
  }

  /** Stops after this step: saves a checkpoint and says how to resume. */
  async interrupt(save: () => Promise<void>): Promise<void> {
    this.interrupted = true;
    await save();
    this.say(
      `interrupted at step ${this.step}/${this.o.totalSteps}; resume with trainer.load_ckpt_from=latest`,
    );
  }

  /** Stops the progress display and releases the run folder's lock (also after an error). */
  close(): void {
    this.progress.stop();
    if (this.isMain) releaseSaveDir(this.o.trainer.save_dir);
  }

  /** Ends the run: stops the progress display and writes the report (rank 0, trainer.report). */
  finish(): SessionResult {
    this.progress.stop();
    const { trainer } = this.o;
    const report = this.isMain && trainer.report ? writeReport(trainer.save_dir) : undefined;
    if (report) this.out.write(`report: ${report}\n`);
    this.close();
    return {
      step: this.step,
      totalSteps: this.o.totalSteps,
      interrupted: this.interrupted,
      saveDir: trainer.save_dir,
      checkpoint: this.checkpoint,
      report,
    };
  }
}
