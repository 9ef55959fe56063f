import assert from 'node:assert/strict';
import { readFileSync, readdirSync } from 'node:fs';
import { join, relative } from 'node:path';
import { fileURLToPath } from 'node:url';
import ts from 'typescript';

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

/** Imports and re-exports of `module` in a file that survive compilation (not `import type`). */
function runtimeImports(text: string, module: string): string[] {
  const source = ts.createSourceFile('source.ts', text, ts.ScriptTarget.Latest, true);
  const found: string[] = [];
  const visit = (node: ts.Node): void => {
    if (
      ts.isImportDeclaration(node) &&
      ts.isStringLiteral(node.moduleSpecifier) &&
      node.moduleSpecifier.text === module
    ) {
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
      if (!typeOnly) found.push(node.getText());
    } else if (
      ts.isExportDeclaration(node) &&
      node.moduleSpecifier !== undefined &&
      ts.isStringLiteral(node.moduleSpecifier) &&
      node.moduleSpecifier.text === module &&
      !node.isTypeOnly
    ) {
      found.push(node.getText());
    } else if (
      ts.isCallExpression(node) &&
      node.expression.kind === ts.SyntaxKind.ImportKeyword &&
      node.arguments[0] !== undefined &&
      ts.isStringLiteral(node.arguments[0]) &&
      node.arguments[0].text.startsWith(module)
    ) {
      found.push(node.getText());
    }
    ts.forEachChild(node, visit);
  };
  visit(source);
  return found;
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
