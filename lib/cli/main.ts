#!/usr/bin/env node
// The `recon8s` executable. Everything testable lives in cli.ts; the agent (run in every database
// pod) is loaded on its own, without the rest of the CLI.

// Output piped into a reader that stops early (`recon8s render … | head`): nothing left to say to it.
for (const stream of [process.stdout, process.stderr])
  stream.on('error', (e: NodeJS.ErrnoException) => {
    if (e.code !== 'EPIPE') throw e;
    process.exit(process.exitCode ?? 0);
  });

const args = process.argv.slice(2);
if (args[0] === 'agent') {
  const { agentCommand } = await import('../agent/main.js');
  process.exitCode = await agentCommand(args.slice(1), process.env);
} else {
  const { main } = await import('./cli.js');
  process.exitCode = await main(args);
}
