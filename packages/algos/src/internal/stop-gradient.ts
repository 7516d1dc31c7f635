import { type Tensor, customGrad, zerosLike } from '@tensorflow/tfjs-core';

/** Identity in the forward pass, zero gradient in the backward pass (torch's `.detach()`). */
export const stopGradient: (x: Tensor) => Tensor = customGrad((x) => ({
  value: (x as Tensor).clone(),
  gradFunc: (dy: Tensor) => zerosLike(dy),
}));
