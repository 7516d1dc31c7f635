/** Token ids and a loss mask of the same length: mask 1 on tokens the model is trained to produce. */
export interface TokenSequence {
  tokens: number[];
  mask: number[];
}
