import { existsSync, readFileSync } from 'node:fs';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { parseArgs } from 'node:util';
import { AGENT_USAGE, agentCommand } from '../agent/main.js';
import { apiError } from '../kube/index.js';
import { APPLY_OPTIONS, APPLY_USAGE, applyCommand } from './apply-command.js';
import {
  BACKUPS_USAGE,
  BINLOG_USAGE,
  binlogArchiveCommand,
  BACKUP_COMMAND_OPTIONS,
  BACKUP_USAGE,
  backupCommand,
  backupsCommand,
  VERIFY_USAGE,
  verifyCommand,
} from './backup-command.js';
import { BINLOG_FIND_USAGE, binlogFindCommand, parseTimeOption } from './binlog-command.js';
import { CONTROLLER_OPTIONS, CONTROLLER_USAGE, controllerCommand } from './controller-command.js';
import { CommandError, DIFF_OPTIONS, DIFF_USAGE, diffCommand } from './diff-command.js';
import {
  MYSQL_COMMAND_OPTIONS,
  STATUS_USAGE,
  SWITCHOVER_USAGE,
  statusCommand,
  switchoverCommand,
} from './mysql-command.js';
import { OPERATOR_POD_OPTIONS, operatorPods } from './operator-pods.js';
import { RENDER_USAGE, renderCommand } from './render-command.js';
import { ROTATE_OPTIONS, ROTATE_USAGE, rotateCredentialsCommand } from './rotate-command.js';
import { UsageError } from './usage-error.js';

const BINLOG_FIND_OPTIONS = {
  statement: { type: 'string' },
  since: { type: 'string' },
  until: { type: 'string' },
} as const;

const USAGE = `Usage: recon8s <command> [options]

Commands:
  render       print what App and MySQLCluster resources render to (offline)
  controller   run the controller that reconciles App and MySQLCluster resources
  diff         show what applying resources would change in the cluster (exit 1 when something would)
  apply        apply resources and converge them once, without a running controller
  switchover   move the primary of a MySQLCluster (the controller performs it)
  status       print the topology of a MySQLCluster
  rotate-credentials
               rotate an App's database password, or a MySQLCluster's own accounts, without
               downtime (the controller performs it)
  backup       back a MySQLCluster up now (as its schedule would) and wait for it, or verify a
               backup by a restore (backup verify NAME [BACKUP])
  backups      list a MySQLCluster's backups and how far its binary-log archive reaches
  binlog       archive a MySQLCluster's binary logs now (binlog archive NAME) and wait for it, or
               search the archived ones for a statement (binlog find NAME --statement TEXT)
  agent        run beside mysqld in a MySQLCluster pod (the StatefulSet starts it)

Run "recon8s <command> --help" (or "recon8s help <command>") for a command's options, and
"recon8s --version" for the version.
`;

/** Each command's own usage, for "recon8s help <command>". */
const COMMAND_USAGE: Readonly<Record<string, string>> = {
  render: RENDER_USAGE,
  controller: CONTROLLER_USAGE,
  diff: DIFF_USAGE,
  apply: APPLY_USAGE,
  switchover: SWITCHOVER_USAGE,
  status: STATUS_USAGE,
  'rotate-credentials': ROTATE_USAGE,
  backup: `${BACKUP_USAGE}\n${VERIFY_USAGE}`,
  backups: BACKUPS_USAGE,
  binlog: `${BINLOG_USAGE}\n${BINLOG_FIND_USAGE}`,
  agent: AGENT_USAGE,
};

/** The command meant by a mistyped one: the closest by edit distance, if it is close. */
export function suggestCommand(typed: string): string | undefined {
  let best: { name: string; distance: number } | undefined;
  for (const name of Object.keys(COMMAND_USAGE)) {
    const distance = editDistance(typed, name);
    if (!best || distance < best.distance) best = { name, distance };
  }
  return best && best.distance <= Math.max(1, Math.floor(best.name.length / 3)) ? best.name : undefined;
}

function editDistance(a: string, b: string): number {
  let previous = Array.from({ length: b.length + 1 }, (_, j) => j);
  for (let i = 1; i <= a.length; i++) {
    const current = [i];
    for (let j = 1; j <= b.length; j++)
      current[j] = Math.min(
        (previous[j] ?? 0) + 1,
        (current[j - 1] ?? 0) + 1,
        (previous[j - 1] ?? 0) + (a[i - 1] === b[j - 1] ? 0 : 1),
      );
    previous = current;
  }
  return previous[b.length] ?? 0;
}

/**
 * Runs the CLI; returns the exit code: 0 ok; 1 an invalid resource (render), differences (diff) or a
 * timeout (apply); 2 a usage, I/O or cluster error (and an invalid resource for diff and apply).
 */
export async function main(
  argv: readonly string[],
  out: NodeJS.WritableStream = process.stdout,
  err: NodeJS.WritableStream = process.stderr,
): Promise<number> {
  const [command, ...rest] = argv;
  try {
    switch (command) {
      case 'agent':
        return await agentCommand(rest, process.env);
      case 'render': {
        const { values } = parseArgs({
          args: [...rest],
          options: {
            filename: { type: 'string', short: 'f' },
            output: { type: 'string', short: 'o', default: 'yaml' },
            ...OPERATOR_POD_OPTIONS,
            help: { type: 'boolean', short: 'h' },
          },
          strict: true,
        });
        if (values.help) {
          out.write(RENDER_USAGE);
          return 0;
        }
        if (!values.filename) throw new UsageError('render needs -f FILE', RENDER_USAGE);
        if (values.output !== 'yaml' && values.output !== 'json')
          throw new UsageError(`-o must be yaml or json, got "${values.output}"`, RENDER_USAGE);
        const operator = operatorPods(
          values['operator-namespace'],
          values['operator-pod-labels'],
          undefined,
          RENDER_USAGE,
        );
        return await renderCommand(
          { filename: values.filename, output: values.output, install: { operator } },
          out,
          err,
        );
      }
      case 'controller': {
        const { values } = parseArgs({ args: [...rest], options: CONTROLLER_OPTIONS, strict: true });
        if (values.help) {
          out.write(CONTROLLER_USAGE);
          return 0;
        }
        return await controllerCommand(values);
      }
      case 'diff': {
        const { values } = parseArgs({ args: [...rest], options: DIFF_OPTIONS, strict: true });
        if (values.help) {
          out.write(DIFF_USAGE);
          return 0;
        }
        if (!values.filename) throw new UsageError('diff needs -f FILE', DIFF_USAGE);
        if (values.color !== 'auto' && values.color !== 'always' && values.color !== 'never')
          throw new UsageError(`--color must be auto, always or never, got "${values.color}"`, DIFF_USAGE);
        return await diffCommand(
          {
            filename: values.filename,
            kubeconfig: values.kubeconfig,
            color: values.color,
            forceConflicts: values['force-conflicts'],
            install: {
              operator: operatorPods(
                values['operator-namespace'],
                values['operator-pod-labels'],
                undefined,
                DIFF_USAGE,
              ),
            },
          },
          out,
          err,
        );
      }
      case 'apply': {
        const { values } = parseArgs({ args: [...rest], options: APPLY_OPTIONS, strict: true, allowNegative: true });
        if (values.help) {
          out.write(APPLY_USAGE);
          return 0;
        }
        if (!values.filename) throw new UsageError('apply needs -f FILE', APPLY_USAGE);
        return await applyCommand(
          {
            filename: values.filename,
            kubeconfig: values.kubeconfig,
            timeout: values.timeout,
            wait: values.wait,
            forceConflicts: values['force-conflicts'],
            operator: operatorPods(values['operator-namespace'], values['operator-pod-labels'], undefined, APPLY_USAGE),
          },
          out,
          err,
        );
      }
      case 'switchover':
      case 'status': {
        const usage = command === 'switchover' ? SWITCHOVER_USAGE : STATUS_USAGE;
        const { values, positionals } = parseArgs({
          args: [...rest],
          options: MYSQL_COMMAND_OPTIONS,
          strict: true,
          allowPositionals: true,
        });
        if (values.help) {
          out.write(usage);
          return 0;
        }
        const [name, ...extra] = positionals;
        if (!name || extra.length > 0) throw new UsageError(`${command} needs exactly one MySQLCluster NAME`, usage);
        if (command === 'status' && values.to !== undefined) throw new UsageError('status takes no --to', usage);
        return command === 'switchover'
          ? await switchoverCommand({ name, ...values }, out, err)
          : await statusCommand({ name, namespace: values.namespace, kubeconfig: values.kubeconfig }, out, err);
      }
      case 'rotate-credentials': {
        const { values, positionals } = parseArgs({
          args: [...rest],
          options: ROTATE_OPTIONS,
          strict: true,
          allowPositionals: true,
        });
        if (values.help) {
          out.write(ROTATE_USAGE);
          return 0;
        }
        const [kind, name, ...extra] = positionals;
        if (!kind || !name || extra.length > 0)
          throw new UsageError('rotate-credentials needs "app NAME" or "mysqlcluster NAME"', ROTATE_USAGE);
        return await rotateCredentialsCommand({ kind, name, ...values }, out, err);
      }
      case 'backup':
      case 'backups':
      case 'binlog': {
        const find = command === 'binlog' && rest.includes('find');
        const usage =
          command === 'backup'
            ? `${BACKUP_USAGE}\n${VERIFY_USAGE}`
            : command === 'backups'
              ? BACKUPS_USAGE
              : find
                ? BINLOG_FIND_USAGE
                : `${BINLOG_USAGE}\n${BINLOG_FIND_USAGE}`;
        const { values, positionals } = parseArgs({
          args: [...rest],
          options:
            command === 'binlog' ? { ...BACKUP_COMMAND_OPTIONS, ...BINLOG_FIND_OPTIONS } : BACKUP_COMMAND_OPTIONS,
          strict: true,
          allowPositionals: true,
        });
        if (values.help) {
          out.write(usage);
          return 0;
        }
        let args = positionals;
        if (command === 'binlog') {
          const [action, ...after] = positionals;
          if (action !== 'archive' && action !== 'find')
            throw new UsageError(
              `binlog needs an action: archive or find (got ${action === undefined ? 'none' : JSON.stringify(action)})`,
              usage,
            );
          args = after;
          const { statement, since, until, ...common } = values as typeof values & {
            statement?: string;
            since?: string;
            until?: string;
          };
          if (action === 'find') {
            const [name, ...extra] = args;
            if (!name || extra.length > 0)
              throw new UsageError('binlog find needs exactly one MySQLCluster NAME', usage);
            if (!statement?.trim())
              throw new UsageError(
                `binlog find needs --statement TEXT, the statement to look for (e.g. 'DROP TABLE orders'), got ${statement === undefined ? 'none' : JSON.stringify(statement)}`,
                usage,
              );
            return await binlogFindCommand(
              {
                name,
                ...common,
                statement,
                since: parseTimeOption('since', since),
                until: parseTimeOption('until', until),
              },
              out,
              err,
            );
          }
          if (statement !== undefined || since !== undefined || until !== undefined)
            throw new UsageError('binlog archive takes no --statement, --since or --until (binlog find does)', usage);
        }
        if (command === 'backup' && args[0] === 'verify' && args.length > 1) {
          const [, name, backup, ...extra] = args;
          if (!name || extra.length > 0)
            throw new UsageError('backup verify needs a MySQLCluster NAME, and at most one BACKUP', VERIFY_USAGE);
          if (backup !== undefined && !/^\d{8}T\d{6}Z$/.test(backup))
            throw new UsageError(
              `backup verify: BACKUP must be a backup's name, the UTC time it started (e.g. 20261124T030000Z), got ${JSON.stringify(backup)}`,
              VERIFY_USAGE,
            );
          return await verifyCommand({ name, backup, ...values }, out, err);
        }
        const [name, ...extra] = args;
        if (!name || extra.length > 0)
          throw new UsageError(
            `${command === 'binlog' ? 'binlog archive' : command} needs exactly one MySQLCluster NAME`,
            usage,
          );
        const run =
          command === 'backup' ? backupCommand : command === 'backups' ? backupsCommand : binlogArchiveCommand;
        return await run({ name, ...values }, out, err);
      }
      case 'help': {
        const [about, ...extra] = rest;
        if (about === undefined) {
          out.write(USAGE);
          return 0;
        }
        const usage = COMMAND_USAGE[about];
        if (!usage || extra.length > 0) throw unknownCommand(about);
        out.write(usage);
        return 0;
      }
      case undefined:
      case '--help':
      case '-h':
        out.write(USAGE);
        return command === undefined ? 2 : 0;
      case '--version':
      case '-V':
      case 'version':
        out.write(`recon8s ${packageVersion()}\n`);
        return 0;
      default:
        throw unknownCommand(command);
    }
  } catch (e) {
    if (e instanceof UsageError) {
      err.write(`error: ${e.message}\n${e.usage ? `\n${e.usage}` : ''}`);
      return 2;
    }
    const code = (e as NodeJS.ErrnoException).code;
    if (code === 'ENOENT' || code === 'EACCES' || code === 'EISDIR') {
      err.write(`error: ${(e as Error).message}\n`);
      return 2;
    }
    if (e instanceof TypeError && (e as NodeJS.ErrnoException).code?.startsWith('ERR_PARSE_ARGS')) {
      err.write(`error: ${e.message}\n\n${USAGE}`);
      return 2;
    }
    if (e instanceof Error && /not valid YAML or JSON/.test(e.message)) {
      err.write(`error: ${e.message}\n`);
      return 2;
    }
    // Anything else (a kubeconfig that cannot be used, a server that cannot be reached, an API error)
    // is said in one line; the stack trace only when asked for.
    err.write(`error: ${e instanceof CommandError ? e.message : describeError(e)}\n`);
    if (process.env.RECON8S_DEBUG && e instanceof Error && e.stack) err.write(`${e.stack}\n`);
    return 2;
  }
}

function unknownCommand(typed: string): UsageError {
  const meant = suggestCommand(typed);
  return new UsageError(`unknown command "${typed}"${meant ? `; did you mean "${meant}"?` : ''}`, USAGE);
}

/** An error in words: an API error's status and message, a system error's code and message. */
function describeError(e: unknown): string {
  const info = apiError(e);
  if (info.code > 0)
    return `the API server answered ${info.code}${info.reason ? ` ${info.reason}` : ''}: ${info.message}`;
  // The first line only: a parser's excerpt of a kubeconfig could show a token or a key.
  return (e instanceof Error ? e.message : String(e)).split('\n')[0] ?? '';
}

/** The version of the package this CLI belongs to (its package.json, found upwards from this module). */
function packageVersion(): string {
  for (let dir = dirname(fileURLToPath(import.meta.url)); ; dir = dirname(dir)) {
    const file = join(dir, 'package.json');
    if (existsSync(file)) {
      const manifest = JSON.parse(readFileSync(file, 'utf8')) as { name?: string; version?: string };
      if (manifest.name === '@recon8s/controller' && manifest.version) return manifest.version;
    }
    if (dirname(dir) === dir) return 'unknown';
  }
}
