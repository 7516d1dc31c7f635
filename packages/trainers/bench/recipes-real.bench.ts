/**
 * `pnpm bench recipes-real`: the shape of Search-R1's loop (a tool call, the tool's result as a
 * user turn merged into the same sequence, then an answer) on a task a tiny model can learn here:
 * examples/calculator-tool (`<calc>a*b</calc>` -> `<result>` -> `<answer>N</answer>`, reward 1 for
 * the product). Per seed 0, 1, 2: init-model, SFT on the protocol's transcripts, then multi-turn
 * GRPO (rollout.max_turns 3) for 40 steps, on a 4-layer hidden-128 Qwen3. Prints the greedy test reward before and after as a
 * Markdown table and writes runs/bench-recipes-real/recipes.html. Needs a build (apps/cli/dist).
 * Options as `pnpm bench recipes`: --seeds=0,1,2 and `ppo.KEY=VALUE` overrides.
 */
import { benchRecipes } from './recipe-runs.js';

benchRecipes(
  {
    title: 'multi-turn tool use (examples/calculator-tool: call, result, answer)',
    sft: 'examples/calculator-tool/sft.yaml',
    grpo: 'examples/calculator-tool/grpo.yaml',
    testFreq: 10,
    out: 'runs/bench-recipes-real',
    // The example's 2-layer hidden-64 model often fails to learn the protocol in SFT; this one does.
    modelFlags: ['--hidden-size', '128', '--layers', '4', '--heads', '4'],
  },
  // The example's lr (1e-3) collapses this model's rewards to 0 within 5 steps; 2e-4 does not.
  {
    grpo: {
      label: 'GRPO, 3 turns',
      keys: ['adv.estimator=grpo', 'actor.lr=2e-4', 'trainer.max_steps=40'],
    },
  },
  process.argv.slice(2),
);
