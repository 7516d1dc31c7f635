export declare function sourcePlugin(): {
  name: string;
  enforce: 'pre';
  resolveId(id: string): string | undefined;
};
export declare function packageConfig(
  dir: string,
  overrides?: Record<string, unknown>,
): Record<string, unknown>;
