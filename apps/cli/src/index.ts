export { createCli } from './program.js';
