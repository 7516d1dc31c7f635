import type { Options } from 'tsup';
export declare function packageBuild(
  entry?: string[] | Record<string, string>,
  options?: Options,
): Options;
