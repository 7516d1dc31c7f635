/**
 * `pnpm bench recipes`: RL2's recipes on the RL demo's task (examples/rl-demo, the largest of
 * four digits) from the same SFT checkpoint per seed: GRPO, Dr. GRPO, RLOO, REINFORCE++ and
 * PPO with a critic (GAE, k1 KL in the reward), seeds 0, 1, 2. Writes
 * runs/bench-recipes/recipes.html (greedy test reward and sampled train reward per step, mean
 * and min-max over seeds, and a table) and prints the table as Markdown. Needs a build
 * (apps/cli/dist). Options: --seeds=0,1,2, --recipes=grpo,rloo (names below), and
 * `ppo.KEY=VALUE` overrides for every run.
 */
import { type Recipe, benchRecipes } from './recipe-runs.js';

/** Each recipe as `rl2 ppo` keys on top of examples/rl-demo/grpo.yaml. */
const recipes: Record<string, Recipe> = {
  grpo: { label: 'GRPO', keys: ['adv.estimator=grpo'] },
  'dr-grpo': { label: 'Dr. GRPO', keys: ['adv.estimator=dr-grpo'] },
  rloo: { label: 'RLOO', keys: ['adv.estimator=rloo'] },
  'reinforce++': { label: 'REINFORCE++', keys: ['adv.estimator=reinforce++'] },
  ppo: {
    label: 'PPO (critic, GAE, k1 KL in the reward)',
    keys: [
      'adv.estimator=gae',
      'critic.lr=3e-3',
      'critic.warmup_ratio=0',
      'critic.weight_decay=0',
      'kl.type=reward',
      'kl.coef=0.01',
      'kl.reward_estimator=k1',
    ],
  },
};

benchRecipes(
  {
    title: 'the RL demo task (the largest of four digits)',
    sft: 'examples/rl-demo/sft.yaml',
    grpo: 'examples/rl-demo/grpo.yaml',
    testFreq: 5,
    out: 'runs/bench-recipes',
  },
  recipes,
  process.argv.slice(2),
);
