/*
 * Reads the Dockerfile and .dockerignore well enough to check what they promise, and replays a
 * Dockerfile's stages in plain directories when Docker is not available: WORKDIR, ENV, COPY (from the
 * context, honouring .dockerignore, or --from an earlier stage) and RUN run for real; the base image is
 * stood in for by the Node (and npm) running the tests. It understands the instructions this project's
 * Dockerfile uses and refuses any other, so a Dockerfile it cannot replay faithfully fails loudly.
 */
import { spawnSync } from 'node:child_process';
import { cpSync, existsSync, mkdirSync, readFileSync, statSync } from 'node:fs';
import { basename, join, posix, relative, sep } from 'node:path';

export interface Instruction {
  /** Upper case: RUN, COPY, ... */
  readonly keyword: string;
  /** Everything after the keyword, continuation lines joined. */
  readonly args: string;
  /** 1-based line of the keyword, for messages. */
  readonly line: number;
}

export interface Stage {
  readonly index: number;
  readonly image: string;
  readonly name: string | undefined;
  readonly instructions: readonly Instruction[];
}

/** Splits a Dockerfile into stages of instructions (comments dropped, `\` continuations joined). */
export function parseDockerfile(text: string): Stage[] {
  const stages: { index: number; image: string; name: string | undefined; instructions: Instruction[] }[] = [];
  const lines = text.split(/\r?\n/);
  for (let i = 0; i < lines.length;) {
    const line = i + 1;
    let logical = lines[i++] ?? '';
    if (/^\s*(#|$)/.test(logical)) continue;
    while (/\\\s*$/.test(logical) && i < lines.length) {
      const next = lines[i++] ?? '';
      if (/^\s*#/.test(next)) continue; // Docker drops comment lines inside a continuation
      logical = `${logical.replace(/\\\s*$/, '')} ${next.trim()}`;
    }
    const m = /^\s*([A-Za-z]+)\s+(.*)$/.exec(logical);
    if (!m) throw new Error(`Dockerfile line ${line}: cannot parse "${logical}"`);
    const keyword = (m[1] ?? '').toUpperCase();
    const args = (m[2] ?? '').trim();
    if (keyword === 'FROM') {
      const from = /^(?:--platform=\S+\s+)?(\S+)(?:\s+AS\s+(\S+))?$/i.exec(args);
      if (!from) throw new Error(`Dockerfile line ${line}: cannot parse FROM "${args}"`);
      stages.push({ index: stages.length, image: from[1] ?? '', name: from[2], instructions: [] });
      continue;
    }
    const stage = stages.at(-1);
    if (!stage) throw new Error(`Dockerfile line ${line}: ${keyword} before the first FROM`);
    stage.instructions.push({ keyword, args, line });
  }
  return stages;
}

/** The instructions of a stage with this keyword. */
export function instructions(stage: Stage, keyword: string): Instruction[] {
  return stage.instructions.filter((i) => i.keyword === keyword);
}

/** The JSON (exec) form of ENTRYPOINT, CMD or RUN, or undefined when it is the shell form. */
export function execForm(args: string): string[] | undefined {
  if (!args.startsWith('[')) return undefined;
  const parsed: unknown = JSON.parse(args);
  if (!Array.isArray(parsed) || !parsed.every((a): a is string => typeof a === 'string'))
    throw new Error(`not a JSON array of strings: ${args}`);
  return parsed;
}

/** `key=value key2="quoted value"` (LABEL, ENV) as a record. */
export function keyValues(args: string): Record<string, string> {
  const out: Record<string, string> = {};
  const re = /([A-Za-z0-9_.-]+)=("(?:[^"\\]|\\.)*"|\S+)\s*/gy;
  let consumed = 0;
  for (let m = re.exec(args); m; m = re.exec(args)) {
    const raw = m[2] ?? '';
    out[m[1] ?? ''] = raw.startsWith('"') ? (JSON.parse(raw) as string) : raw;
    consumed = re.lastIndex;
  }
  if (consumed !== args.length) throw new Error(`cannot parse key=value pairs: ${args}`);
  return out;
}

export interface CopyArgs {
  readonly from: string | undefined;
  readonly sources: readonly string[];
  readonly dest: string;
}

/** COPY [--from=stage] [--chown=..] [--link] src... dest (shell form only). */
export function copyArgs(args: string): CopyArgs {
  if (args.startsWith('[')) throw new Error(`COPY in JSON form is not supported here: ${args}`);
  const words = args.split(/\s+/);
  let from: string | undefined;
  while (words[0]?.startsWith('--')) {
    const flag = words.shift() ?? '';
    const m = /^--from=(.+)$/.exec(flag);
    if (m) from = m[1];
    else if (!/^--(chown|chmod)=|^--link$/.test(flag)) throw new Error(`COPY flag not supported here: ${flag}`);
  }
  const dest = words.pop();
  if (dest === undefined || words.length === 0) throw new Error(`COPY needs sources and a destination: ${args}`);
  return { from, sources: words, dest };
}

export interface IgnoreRule {
  readonly pattern: string;
  readonly negated: boolean;
  readonly re: RegExp;
}

/** The rules of a .dockerignore file. */
export function parseDockerignore(text: string): IgnoreRule[] {
  return text
    .split(/\r?\n/)
    .map((l) => l.trim())
    .filter((l) => l !== '' && !l.startsWith('#'))
    .map((l) => {
      const negated = l.startsWith('!');
      const pattern = posix.normalize((negated ? l.slice(1) : l).trim()).replace(/^\/+|\/+$/g, '');
      return { pattern, negated, re: globToRegExp(pattern) };
    });
}

function globToRegExp(glob: string): RegExp {
  let re = '';
  for (let i = 0; i < glob.length; i++) {
    const c = glob[i] ?? '';
    if (c === '*' && glob[i + 1] === '*') {
      i++;
      if (glob[i + 1] === '/') {
        i++;
        re += '(?:.*/)?';
      } else re += '.*';
    } else if (c === '*') re += '[^/]*';
    else if (c === '?') re += '[^/]';
    else re += c.replace(/[.+^${}()|[\]\\]/g, '\\$&');
  }
  return new RegExp(`^${re}$`);
}

/**
 * Whether Docker leaves `path` (relative to the context, `/`-separated) out of the build context: the
 * last rule matching the path or one of its parent directories decides.
 */
export function isIgnored(path: string, rules: readonly IgnoreRule[]): boolean {
  const parts = posix.normalize(path).replace(/^\/+/, '').split('/');
  const candidates = parts.map((_, i) => parts.slice(0, i + 1).join('/'));
  let ignored = false;
  for (const rule of rules) if (candidates.some((c) => rule.re.test(c))) ignored = !rule.negated;
  return ignored;
}

export interface ReplayOptions {
  /** Environment of RUN steps (PATH must find a Node 24 `node` and `npm`, standing in for the base image). */
  readonly env: NodeJS.ProcessEnv;
  /** Limit per RUN step. */
  readonly runTimeoutMs: number;
}

export interface ReplayedStage {
  readonly stage: Stage;
  /** The directory standing in for the stage's filesystem root. */
  readonly root: string;
  /** WORKDIR at the end of the stage (a path inside the image). */
  readonly workdir: string;
  readonly env: Readonly<Record<string, string>>;
}

/**
 * Replays every stage into `workRoot/stage-N`, each a stand-in for that stage's root filesystem (only
 * what the Dockerfile writes; the base image's own files are not there). Throws on the first failing step.
 */
export function replayDockerfile(
  stages: readonly Stage[],
  contextDir: string,
  workRoot: string,
  opts: ReplayOptions,
): ReplayedStage[] {
  const ignorePath = join(contextDir, '.dockerignore');
  const rules = existsSync(ignorePath) ? parseDockerignore(readFileSync(ignorePath, 'utf8')) : [];
  const done: ReplayedStage[] = [];
  for (const stage of stages) {
    if (done.some((d) => d.stage.name === stage.image))
      throw new Error(`FROM an earlier stage (${stage.image}) is not supported here`);
    const root = join(workRoot, `stage-${stage.index}`);
    mkdirSync(root, { recursive: true });
    const inRoot = (p: string): string => join(root, ...p.split('/'));
    let workdir = '/';
    const env: Record<string, string> = {};
    for (const ins of stage.instructions) {
      const where = `Dockerfile line ${ins.line} (${ins.keyword} ${ins.args})`;
      switch (ins.keyword) {
        case 'WORKDIR':
          workdir = posix.resolve(workdir, ins.args);
          mkdirSync(inRoot(workdir), { recursive: true });
          break;
        case 'ENV':
          Object.assign(env, keyValues(ins.args));
          break;
        case 'COPY': {
          const copy = copyArgs(ins.args);
          const dest = posix.resolve(workdir, copy.dest);
          const into = copy.dest.endsWith('/') || copy.sources.length > 1;
          for (const src of copy.sources) {
            let from: string;
            let filter: ((source: string) => boolean) | undefined;
            if (copy.from === undefined) {
              if (isIgnored(src, rules)) throw new Error(`${where}: ${src} is excluded by .dockerignore`);
              from = join(contextDir, src);
              filter = (source) => !isIgnored(relative(contextDir, source).split(sep).join('/'), rules);
            } else {
              const source = done.find((d) => d.stage.name === copy.from || String(d.stage.index) === copy.from);
              if (!source) throw new Error(`${where}: no earlier stage ${copy.from}`);
              from = join(source.root, ...posix.resolve(source.workdir, src).split('/'));
            }
            if (!existsSync(from)) throw new Error(`${where}: ${src} does not exist`);
            const target = statSync(from).isDirectory() || !into ? inRoot(dest) : join(inRoot(dest), basename(from));
            cpSync(from, target, { recursive: true, verbatimSymlinks: true, filter });
          }
          break;
        }
        case 'RUN': {
          const exec = execForm(ins.args);
          // Docker runs the shell form with /bin/sh -c, under umask 022.
          const [command, ...args] = exec ?? ['/bin/sh', '-c', `umask 022\n${ins.args}`];
          const r = spawnSync(command ?? '', args, {
            cwd: inRoot(workdir),
            env: { ...opts.env, ...env },
            encoding: 'utf8',
            timeout: opts.runTimeoutMs,
            killSignal: 'SIGKILL',
            maxBuffer: 64 << 20,
          });
          if (r.status !== 0)
            throw new Error(
              `${where} failed (status ${r.status}, signal ${r.signal}${r.error ? `, ${r.error.message}` : ''}):\n${r.stdout}\n${r.stderr}`,
            );
          break;
        }
        case 'USER':
        case 'LABEL':
        case 'EXPOSE':
        case 'ENTRYPOINT':
        case 'CMD':
          break; // metadata: checked by the tests, nothing to replay
        default:
          throw new Error(`${where}: the replay does not support ${ins.keyword}`);
      }
    }
    done.push({ stage, root, workdir, env });
  }
  return done;
}
