#!/usr/bin/env node
// The `recon8s` executable. Everything testable lives in cli.ts.
import { main } from './cli.js';

process.exitCode = await main(process.argv.slice(2));
