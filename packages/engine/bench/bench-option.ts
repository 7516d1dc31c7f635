// The `--name N` options of the engine's benchmarks.

/** The number after `--name` on the command line, else `fallback`. */
export function numberOption(name: string, fallback: number): number {
  const argv = process.argv.slice(2);
  const i = argv.indexOf(`--${name}`);
  return i >= 0 ? Number(argv[i + 1]) : fallback;
}
