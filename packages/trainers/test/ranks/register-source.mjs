// `node --import tsx --import ./register-source.mjs rank.ts`: resolve @rl2/* to source (see source-hooks.mjs).
import { register } from 'node:module';

register('./source-hooks.mjs', import.meta.url);
