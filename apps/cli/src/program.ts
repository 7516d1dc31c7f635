import { cac } from 'cac';
import { readFileSync } from 'node:fs';

const { version } = JSON.parse(readFileSync(new URL('../package.json', import.meta.url), 'utf8')) as {
  version: string;
};

/** Builds the `rl2` command. Trainers and tools register their sub-commands here. */
export function createCli() {
  const cli = cac('rl2');
  cli.usage('<command> [key=value ...]');
  cli.help();
  cli.version(version);
  return cli;
}
