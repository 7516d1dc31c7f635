import type { SeededRng } from '@rl2/data';
import { decodeKernels } from '@rl2/engine';

/** Sampling parameters of one request (SGLang `sampling_params` names in camelCase). */
export interface SamplingParams {
  /** 0 means greedy (argmax). Default 1. */
  temperature?: number;
  /** Nucleus sampling: keep the smallest set of tokens whose probability reaches topP. Default 1 (off). */
  topP?: number;
  /** Keep the k most likely tokens; <= 0 or undefined is off. */
  topK?: number;
}

/** A token id with its log-probability (same distribution as the sampled token's). */
export interface TokenLogprob {
  id: number;
  logprob: number;
}

/** What `sampleToken` picked; `top` holds the `topLogprobs` most likely tokens when asked. */
export interface SampledToken {
  token: number;
  logprob: number;
  top?: TokenLogprob[];
}

/**
 * Picks the next token from one row of logits [V] and returns it with its log-probability
 * under the temperature-scaled full distribution log_softmax(logits / T) (T = 1 for greedy),
 * i.e. the quantity a trainer recomputes with the same temperature. top-k, then top-p
 * (Holtzman et al. 2019, https://arxiv.org/abs/1904.09751) restrict the candidates.
 */
export function sampleToken(
  logits: Float32Array,
  params: SamplingParams,
  rng: SeededRng,
  topLogprobs = 0,
): SampledToken {
  const picked = pickToken(logits, params, rng);
  if (topLogprobs <= 0) return { token: picked.token, logprob: picked.logprob };
  return {
    token: picked.token,
    logprob: picked.logprob,
    top: mostLikely(picked.w, picked.sum, topLogprobs),
  };
}

/**
 * `sampleToken` for each row of `logits` [rows, V] (row i with params[i], rngs[i] and
 * topLogprobs[i]). On `native`, rows without top-k, top-p or top log-probs are sampled in one
 * addon call (the same inverse CDF and one draw of their rng, weights in float32 there: a token
 * within ~1e-7 of a CDF boundary may differ from `sampleToken`'s, logprobs agree to ~1e-6);
 * `skip[i]` leaves row i unsampled (undefined in the result).
 */
export function sampleRows(
  logits: Float32Array,
  params: readonly SamplingParams[],
  rngs: readonly SeededRng[],
  topLogprobs: readonly number[] = [],
  skip: readonly boolean[] = [],
): (SampledToken | undefined)[] {
  const rows = params.length;
  const v = logits.length / rows;
  const out: (SampledToken | undefined)[] = new Array(rows);
  const kernels = decodeKernels();
  const plain = (i: number) =>
    !skip[i] &&
    !(topLogprobs[i]! > 0) &&
    !(params[i]!.topK! > 0 && params[i]!.topK! < v) &&
    !((params[i]!.topP ?? 1) < 1);
  const batched = kernels ? params.map((_, i) => plain(i)) : [];
  if (kernels && batched.some((b) => b)) {
    const temperature = new Float64Array(rows).fill(Number.NaN);
    const u = new Float64Array(rows);
    params.forEach((p, i) => {
      if (!batched[i]) return;
      const t = p.temperature ?? 1;
      temperature[i] = Math.max(t, 0);
      if (t > 0) u[i] = rngs[i]!.next();
    });
    const tokens = new Int32Array(rows);
    const logprobs = new Float64Array(rows);
    kernels.sampleRows(logits, rows, v, temperature, u, tokens, logprobs);
    batched.forEach((b, i) => {
      if (b) out[i] = { token: tokens[i]!, logprob: logprobs[i]! };
    });
  }
  for (let i = 0; i < rows; i++) {
    if (!skip[i] && !out[i])
      out[i] = sampleToken(
        logits.subarray(i * v, (i + 1) * v),
        params[i]!,
        rngs[i]!,
        topLogprobs[i] ?? 0,
      );
  }
  return out;
}

/** The `n` largest weights as {id, log(w / sum)}, most likely first (ties: lower id first). */
function mostLikely(w: Float64Array, sum: number, n: number): TokenLogprob[] {
  const k = Math.min(n, w.length);
  const ids: number[] = [];
  for (let i = 0; i < w.length; i++) {
    if (ids.length === k && !(w[i]! > w[ids[k - 1]!]!)) continue;
    if (ids.length < k) ids.push(i);
    else ids[k - 1] = i;
    let at = ids.length - 1;
    while (at > 0 && w[ids[at - 1]!]! < w[i]!) {
      ids[at] = ids[at - 1]!;
      at -= 1;
    }
    ids[at] = i;
  }
  return ids.map((id) => ({ id, logprob: Math.log(w[id]! / sum) }));
}

/** sampleToken's choice, with the weights exp((l - max) / T) and their sum it drew from. */
function pickToken(
  logits: Float32Array,
  params: SamplingParams,
  rng: SeededRng,
): { token: number; logprob: number; w: Float64Array; sum: number } {
  const temperature = params.temperature ?? 1;
  const t = temperature > 0 ? temperature : 1;
  const v = logits.length;
  let max = Number.NEGATIVE_INFINITY;
  let argmax = 0;
  for (let i = 0; i < v; i++) {
    if (logits[i]! > max) {
      max = logits[i]!;
      argmax = i;
    }
  }
  // unnormalised probabilities exp((l - max) / T), computed once
  const w = new Float64Array(v);
  let sum = 0;
  for (let i = 0; i < v; i++) {
    w[i] = Math.exp((logits[i]! - max) / t);
    sum += w[i]!;
  }
  const logprobOf = (i: number) => Math.log(w[i]! / sum);
  if (temperature <= 0) return { token: argmax, logprob: logprobOf(argmax), w, sum };
  const topK = params.topK !== undefined && params.topK > 0 ? Math.min(params.topK, v) : v;
  const topP = params.topP ?? 1;
  if (topK === v && topP >= 1) {
    let u = rng.next() * sum;
    for (let i = 0; i < v; i++) {
      u -= w[i]!;
      if (u < 0) return { token: i, logprob: logprobOf(i), w, sum };
    }
    return { token: argmax, logprob: logprobOf(argmax), w, sum };
  }
  // Sort only the tokens with w >= 1e-4 (w of the argmax is 1) when they already hold the
  // top-k and the top-p mass: the nucleus is a prefix of the sorted order, so it lies among them.
  let candidates: number[] = [];
  let head = 0;
  for (let i = 0; i < v; i++) {
    if (w[i]! >= 1e-4) {
      candidates.push(i);
      head += w[i]!;
    }
  }
  // fall back to all tokens when the head cannot contain the answer: fewer than k tokens with
  // top-p off, or less than the top-p mass
  if ((topP >= 1 && candidates.length < topK) || head < topP * sum)
    candidates = Array.from({ length: v }, (_, i) => i);
  candidates.sort((a, b) => w[b]! - w[a]!);
  if (candidates.length > topK) candidates.length = topK;
  if (topP < 1) {
    let mass = 0;
    let keep = 0;
    while (keep < candidates.length && mass < topP * sum) mass += w[candidates[keep++]!]!;
    candidates.length = Math.max(1, keep);
  }
  let total = 0;
  for (const i of candidates) total += w[i]!;
  let u = rng.next() * total;
  for (const i of candidates) {
    u -= w[i]!;
    if (u < 0) return { token: i, logprob: logprobOf(i), w, sum };
  }
  const last = candidates[candidates.length - 1]!;
  return { token: last, logprob: logprobOf(last), w, sum };
}
