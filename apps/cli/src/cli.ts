#!/usr/bin/env node
import { createCli } from './program.js';

const cli = createCli();
cli.parse(process.argv, { run: false });
if (!cli.matchedCommand && !cli.options.help && !cli.options.version) {
  cli.outputHelp();
  process.exitCode = cli.args.length > 0 ? 1 : 0;
} else {
  await cli.runMatchedCommand();
}
