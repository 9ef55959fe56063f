#!/usr/bin/env node
// The `recon8s` executable. Everything testable lives in cli.ts.
import { main } from './cli.js';

// Output piped into a reader that stops early (`recon8s render … | head`): nothing left to say to it.
for (const stream of [process.stdout, process.stderr])
  stream.on('error', (e: NodeJS.ErrnoException) => {
    if (e.code !== 'EPIPE') throw e;
    process.exit(process.exitCode ?? 0);
  });

process.exitCode = await main(process.argv.slice(2));
