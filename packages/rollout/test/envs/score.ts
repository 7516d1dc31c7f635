export function scoreOf(verdict: number): number {
  return verdict * 10;
}
