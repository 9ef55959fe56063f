/** When to colour: `always`, `never`, or `auto` (a terminal, and NO_COLOR not set). */
export type ColorMode = 'always' | 'never' | 'auto';

const RESET = '\u001b[0m';
const BOLD = '\u001b[1m';
const RED = '\u001b[31m';
const GREEN = '\u001b[32m';
const CYAN = '\u001b[36m';

/**
 * Whether output to `stream` gets colours. `auto`: only a terminal, and only when NO_COLOR is unset or
 * empty (https://no-color.org); `always`/`never` win over both.
 */
export function useColor(
  mode: ColorMode,
  stream: { readonly isTTY?: boolean },
  env: NodeJS.ProcessEnv = process.env,
): boolean {
  if (mode === 'always') return true;
  if (mode === 'never') return false;
  return stream.isTTY === true && (env.NO_COLOR === undefined || env.NO_COLOR === '');
}

/**
 * Colours a unified diff as git does: file headers bold, hunk headers cyan, removed lines red, added
 * lines green; context lines and `\ No newline` markers unchanged. Hunk line counts are followed, so a
 * removed line that reads `-- x` is still a removed line, not a file header. Each line is reset at its
 * end, so a pager or a cut-off line never bleeds colour.
 */
export function colorizeDiff(diff: string): string {
  let oldLeft = 0;
  let newLeft = 0;
  return diff
    .split(/(?<=\n)/)
    .map((line) => {
      const body = line.endsWith('\n') ? line.slice(0, -1) : line;
      const nl = line.endsWith('\n') ? '\n' : '';
      let color: string | undefined;
      if (oldLeft > 0 || newLeft > 0) {
        const op = body[0];
        if (op === '-') {
          color = RED;
          oldLeft--;
        } else if (op === '+') {
          color = GREEN;
          newLeft--;
        } else if (op === ' ') {
          oldLeft--;
          newLeft--;
        }
      } else if (body.startsWith('@@')) {
        color = CYAN;
        const m = /^@@ -\d+(?:,(\d+))? \+\d+(?:,(\d+))? @@/.exec(body);
        oldLeft = m ? Number(m[1] ?? 1) : 0;
        newLeft = m ? Number(m[2] ?? 1) : 0;
      } else if (body.startsWith('--- ') || body.startsWith('+++ ')) {
        color = BOLD;
      }
      return color === undefined ? line : `${color}${body}${RESET}${nl}`;
    })
    .join('');
}
