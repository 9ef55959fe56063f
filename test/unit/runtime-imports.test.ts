import assert from 'node:assert/strict';
import { readFileSync, readdirSync } from 'node:fs';
import { dirname, join, relative, resolve, sep } from 'node:path';
import { fileURLToPath } from 'node:url';
import ts from 'typescript';
import { PEERS } from '../../scripts/pack-constructs.js';

const ROOT = fileURLToPath(new URL('../..', import.meta.url));

function sources(dir: string): string[] {
  const out: string[] = [];
  for (const e of readdirSync(dir, { withFileTypes: true })) {
    const p = join(dir, e.name);
    if (e.isDirectory()) out.push(...sources(p));
    else if (e.name.endsWith('.ts') && !e.name.endsWith('.d.ts')) out.push(p);
  }
  return out;
}

interface RuntimeImport {
  readonly specifier: string;
  readonly dynamic: boolean;
  /** The statement or call, for messages. */
  readonly text: string;
}

/** The imports, re-exports and dynamic imports of a file that survive compilation (not `import type`). */
function runtimeImportsOf(text: string): RuntimeImport[] {
  const source = ts.createSourceFile('source.ts', text, ts.ScriptTarget.Latest, true);
  const found: RuntimeImport[] = [];
  const visit = (node: ts.Node): void => {
    if (ts.isImportDeclaration(node) && ts.isStringLiteral(node.moduleSpecifier)) {
      const clause = node.importClause;
      const named = clause?.namedBindings;
      const typeOnly =
        clause !== undefined &&
        (clause.isTypeOnly ||
          (clause.name === undefined &&
            named !== undefined &&
            ts.isNamedImports(named) &&
            named.elements.length > 0 &&
            named.elements.every((e) => e.isTypeOnly)));
      if (!typeOnly) found.push({ specifier: node.moduleSpecifier.text, dynamic: false, text: node.getText() });
    } else if (
      ts.isExportDeclaration(node) &&
      node.moduleSpecifier !== undefined &&
      ts.isStringLiteral(node.moduleSpecifier) &&
      !node.isTypeOnly
    ) {
      found.push({ specifier: node.moduleSpecifier.text, dynamic: false, text: node.getText() });
    } else if (
      ts.isCallExpression(node) &&
      node.expression.kind === ts.SyntaxKind.ImportKeyword &&
      node.arguments[0] !== undefined &&
      ts.isStringLiteral(node.arguments[0])
    ) {
      found.push({ specifier: node.arguments[0].text, dynamic: true, text: node.getText() });
    }
    ts.forEachChild(node, visit);
  };
  visit(source);
  return found;
}

/** The runtime imports of `module` in a file (dynamic ones of its subpaths too). */
function runtimeImports(text: string, module: string): string[] {
  return runtimeImportsOf(text)
    .filter((i) => i.specifier === module || (i.dynamic && i.specifier.startsWith(module)))
    .map((i) => i.text);
}

describe('what the controller loads at run time', () => {
  it('uses @kubernetes/client-node for types only (its entry point alone costs ~80 MiB of RSS)', () => {
    const offenders = ['lib', 'constructs']
      .flatMap((d) => sources(join(ROOT, d)))
      .flatMap((f) =>
        runtimeImports(readFileSync(f, 'utf8'), '@kubernetes/client-node').map((i) => `${relative(ROOT, f)}: ${i}`),
      );
    assert.deepEqual(offenders, [], 'import them with `import type`, or use lib/kube');
  });

  it('the check sees value imports, re-exports and dynamic imports, and lets type-only imports pass', () => {
    const probe = [
      "import { KubeConfig } from 'm';",
      "import type { V1Pod } from 'm';",
      "import { type V1Secret } from 'm';",
      "import { type V1Lease, CoreV1Api } from 'm';",
      "export { Watch } from 'm';",
      "export type { V1Node } from 'm';",
      "const x = await import('m');",
    ].join('\n');
    assert.deepEqual(runtimeImports(probe, 'm'), [
      "import { KubeConfig } from 'm';",
      "import { type V1Lease, CoreV1Api } from 'm';",
      "export { Watch } from 'm';",
      "import('m')",
    ]);
  });
});

describe('what the constructs load at run time', () => {
  it('nothing but their own modules and the peers of the constructs package, which both of its builds (ES modules, CommonJS) load', () => {
    const constructs = join(ROOT, 'constructs');
    const peers = new Set<string>(PEERS);
    const offenders = sources(constructs).flatMap((f) =>
      runtimeImportsOf(readFileSync(f, 'utf8'))
        .filter((i) =>
          i.specifier.startsWith('.')
            ? !resolve(dirname(f), i.specifier).startsWith(constructs + sep)
            : !peers.has(i.specifier),
        )
        .map((i) => `${relative(ROOT, f)}: ${i.text}`),
    );
    assert.deepEqual(
      offenders,
      [],
      `the constructs package ships constructs/ alone and requires only ${PEERS.join(', ')}`,
    );
  });
});
