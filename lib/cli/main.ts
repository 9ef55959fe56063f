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
  // Exits when it returns, whatever is still open (a peer's session, a probe's connection): the pod
  // restarts it, and an agent that stopped serving must never linger (the kubelet's probes of mysqld
  // go to it).
  process.exit(await agentCommand(args.slice(1), process.env));
} else {
  const { main } = await import('./cli.js');
  process.exitCode = await main(args);
}
