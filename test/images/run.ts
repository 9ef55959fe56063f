/*
 * Child processes of the image builds: output streamed line by line to the caller (a cold build
 * takes minutes and should show what it does), errors carrying the command and its last lines.
 */
import { spawn } from 'node:child_process';

export interface RunOptions {
  readonly cwd?: string;
  readonly env?: NodeJS.ProcessEnv;
  /** Every line the command writes, stdout and stderr alike. */
  readonly onOutput?: (line: string) => void;
  /** Limit, after which the command is killed (SIGKILL). */
  readonly timeoutMs?: number;
}

/** Runs a command to completion and resolves with its stdout; rejects with its last lines otherwise. */
export function runCommand(command: string, args: readonly string[], opts: RunOptions = {}): Promise<string> {
  return new Promise((resolve, reject) => {
    const child = spawn(command, args, {
      cwd: opts.cwd,
      env: opts.env ?? process.env,
      stdio: ['ignore', 'pipe', 'pipe'],
    });
    let stdout = '';
    const tail: string[] = [];
    const lines = (chunk: Buffer, keep: boolean): void => {
      const text = chunk.toString();
      if (keep) stdout += text;
      for (const line of text.split('\n')) {
        if (line === '') continue;
        tail.push(line);
        if (tail.length > 30) tail.shift();
        opts.onOutput?.(line);
      }
    };
    child.stdout.on('data', (c: Buffer) => lines(c, true));
    child.stderr.on('data', (c: Buffer) => lines(c, false));
    const timer = opts.timeoutMs === undefined ? undefined : setTimeout(() => child.kill('SIGKILL'), opts.timeoutMs);
    child.on('error', (e) => {
      clearTimeout(timer);
      reject(new Error(`${command} could not be started: ${e.message}`));
    });
    child.on('close', (code, signal) => {
      clearTimeout(timer);
      if (code === 0) resolve(stdout);
      else
        reject(
          new Error(
            `${[command, ...args].join(' ')} ${signal ? `was killed by ${signal}` : `exited with code ${code}`}:\n${tail.join('\n')}`,
          ),
        );
    });
  });
}
