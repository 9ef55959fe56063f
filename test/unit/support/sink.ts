import { Writable } from 'node:stream';

/** A stream that keeps what is written to it: the CLI's stdout or stderr, read back by a test. */
export function sink(): { stream: Writable; text: () => string } {
  const chunks: string[] = [];
  return {
    stream: new Writable({
      write(chunk: Buffer, _enc, done) {
        chunks.push(String(chunk));
        done();
      },
    }),
    text: () => chunks.join(''),
  };
}
