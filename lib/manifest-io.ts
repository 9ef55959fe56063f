import { readFile } from 'node:fs/promises';
import { parseAllDocuments, stringify } from 'yaml';

/** Reads one or more objects from YAML (multi-document) or JSON text; `-` is standard input. */
export async function readManifests(path: string): Promise<unknown[]> {
  const text = path === '-' ? await readStdin() : await readFile(path, 'utf8');
  return parseManifests(text, path === '-' ? '<stdin>' : path);
}

export function parseManifests(text: string, source: string): unknown[] {
  const docs = parseAllDocuments(text, { prettyErrors: true });
  const out: unknown[] = [];
  for (const [i, doc] of docs.entries()) {
    if (doc.errors.length > 0) {
      throw new Error(
        `${source}: document ${i + 1} is not valid YAML or JSON: ${doc.errors[0]?.message ?? 'parse error'}`,
      );
    }
    const value: unknown = doc.toJS({ maxAliasCount: 100 });
    if (value === null || value === undefined) continue;
    // A List (kubectl get -o yaml) carries its objects in items.
    if (
      typeof value === 'object' &&
      !Array.isArray(value) &&
      (value as { kind?: unknown }).kind === 'List' &&
      Array.isArray((value as { items?: unknown }).items)
    ) {
      out.push(...(value as { items: unknown[] }).items);
    } else if (Array.isArray(value)) {
      out.push(...value);
    } else {
      out.push(value);
    }
  }
  return out;
}

/** Multi-document YAML, one document per object, as `kubectl` and `cdk8s synth` write it. */
export function toYaml(objects: readonly unknown[]): string {
  return objects.map((o) => stringify(o, { lineWidth: 0 })).join('---\n');
}

async function readStdin(): Promise<string> {
  const chunks: Buffer[] = [];
  for await (const chunk of process.stdin) chunks.push(chunk as Buffer);
  return Buffer.concat(chunks).toString('utf8');
}
