/*
 * npm run lint's import-cycle step: no module of lib/ or constructs/ reaches itself through its imports.
 * Every relative import counts, `import type` and re-exports too: a cycle of types still means two
 * modules that cannot be read (or split) apart, and a contract declared in an implementation file.
 * Where two modules need the same types, those belong in a contract module both import (lib/controller/
 * kind-controller.ts, lib/mysql/topology.ts, lib/controller/mysql-cluster/ha/ports.ts).
 *
 * Hand-written (about sixty lines over TypeScript's own import scanner) rather than madge or
 * eslint-plugin-import: those pull in a resolver and parsers of their own for what the compiler we
 * already run answers. Prints each cycle as a chain of files and exits 1 when there is one.
 *
 *   tsx scripts/import-cycles.ts [folder...]   default: lib constructs
 */
import { existsSync, readFileSync, readdirSync } from 'node:fs';
import { dirname, join, relative, resolve } from 'node:path';
import { fileURLToPath } from 'node:url';
import ts from 'typescript';

const ROOT = join(dirname(fileURLToPath(import.meta.url)), '..');

function sources(dir: string): string[] {
  return readdirSync(dir, { withFileTypes: true }).flatMap((e) => {
    const p = join(dir, e.name);
    if (e.isDirectory()) return e.name === 'node_modules' ? [] : sources(p);
    return e.name.endsWith('.ts') && !e.name.endsWith('.d.ts') ? [p] : [];
  });
}

/** The file a relative specifier names (`./x.js` is `./x.ts`; a folder, its index.ts), if it is one of ours. */
function resolveImport(from: string, specifier: string): string | undefined {
  if (!specifier.startsWith('.')) return undefined;
  const base = resolve(dirname(from), specifier);
  const candidates = [base.replace(/\.js$/, '.ts'), `${base}.ts`, join(base, 'index.ts')];
  return candidates.find((c) => c.endsWith('.ts') && existsSync(c));
}

/** The import graph: each file and the files it imports. */
export function importGraph(files: readonly string[]): Map<string, string[]> {
  const graph = new Map<string, string[]>();
  for (const file of files) {
    const scanned = ts.preProcessFile(readFileSync(file, 'utf8'), true, true);
    const targets = scanned.importedFiles.map((i) => resolveImport(file, i.fileName));
    graph.set(file, [...new Set(targets.filter((t): t is string => t !== undefined))]);
  }
  return graph;
}

/** The cycles of a graph: its strongly connected components of more than one file, or a file importing itself. */
export function importCycles(graph: ReadonlyMap<string, readonly string[]>): string[][] {
  // Tarjan's algorithm, iterative over the files in name order so that the report is stable.
  const index = new Map<string, number>();
  const low = new Map<string, number>();
  const stack: string[] = [];
  const onStack = new Set<string>();
  const cycles: string[][] = [];
  const visit = (v: string): void => {
    index.set(v, index.size);
    low.set(v, index.get(v) ?? 0);
    stack.push(v);
    onStack.add(v);
    for (const w of graph.get(v) ?? []) {
      if (!index.has(w)) {
        visit(w);
        low.set(v, Math.min(low.get(v) ?? 0, low.get(w) ?? 0));
      } else if (onStack.has(w)) low.set(v, Math.min(low.get(v) ?? 0, index.get(w) ?? 0));
    }
    if (low.get(v) !== index.get(v)) return;
    const component: string[] = [];
    for (let w = stack.pop(); w !== undefined; w = w === v ? undefined : stack.pop()) {
      onStack.delete(w);
      component.push(w);
    }
    if (component.length > 1 || graph.get(v)?.includes(v)) cycles.push(component.sort());
  };
  for (const v of [...graph.keys()].sort()) if (!index.has(v)) visit(v);
  return cycles;
}

if (process.argv[1] === fileURLToPath(import.meta.url)) {
  const folders = process.argv.slice(2).length > 0 ? process.argv.slice(2) : ['lib', 'constructs'];
  const files = folders.flatMap((f) => sources(join(ROOT, f)));
  const cycles = importCycles(importGraph(files));
  for (const c of cycles) console.error(`import cycle: ${c.map((f) => relative(ROOT, f)).join(' ↔ ')}`);
  if (cycles.length > 0) {
    console.error(`import-cycles.ts: ${cycles.length} cycle(s) among ${files.length} files of ${folders.join(', ')}`);
    process.exit(1);
  }
}
