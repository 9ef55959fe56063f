import type { ObjectNode, SchemaNode } from './schema.js';

/**
 * Writes the TypeScript types of a spec definition: for each object node the public props interface
 * (`readonly`, JSDoc with the description and `@default`, optional where a default exists) and a
 * `Resolved…` twin in which every defaulted field is present — what a construct sees after
 * `applyDefaults`. The output is committed as `*.generated.ts` and a unit test keeps it current.
 */
export function generateTypes(
  roots: readonly ObjectNode[],
  options: { readonly source: string; readonly imports?: readonly string[] },
): string {
  const objects = collectObjects(roots);
  const lines: string[] = [
    `// Generated from ${options.source} by constructs/schema/codegen.ts (npm run codegen). Do not edit.`,
    ...(options.imports ?? []),
    '',
  ];
  for (const node of objects) lines.push(...interfaceFor(node, false), '', ...interfaceFor(node, true), '');
  return lines.join('\n').replace(/\n+$/, '\n');
}

function collectObjects(roots: readonly ObjectNode[]): ObjectNode[] {
  const found = new Map<string, ObjectNode>();
  const visit = (node: SchemaNode): void => {
    if (node.type === 'object') {
      if (node.preserveUnknownFields) return;
      const seen = found.get(node.typeName);
      // The same type may sit under fields with other descriptions; its properties must be the same.
      if (seen && seen.properties !== node.properties)
        throw new Error(`two different object nodes are named ${node.typeName}`);
      if (seen) return;
      found.set(node.typeName, node);
      for (const p of Object.values(node.properties)) visit(p.node);
    } else if (node.type === 'array') {
      visit(node.items);
    } else if (node.type === 'map') {
      visit(node.values);
    }
  };
  roots.forEach(visit);
  return [...found.values()];
}

function interfaceFor(node: ObjectNode, resolved: boolean): string[] {
  const name = resolved ? `Resolved${node.typeName}` : node.typeName;
  const out = resolved
    ? [`/** {@link ${node.typeName}} with every default applied. */`, `export interface ${name} {`]
    : [...docComment(node.description, undefined, ''), `export interface ${name} {`];
  for (const [prop, { node: child, required }] of Object.entries(node.properties)) {
    const present = required || (resolved && hasDefault(child));
    if (!resolved) out.push(...docComment(child.description, defaultText(child, required), '  '));
    out.push(`  readonly ${prop}${present ? '' : '?'}: ${typeOf(child, resolved)};`);
  }
  out.push('}');
  return out;
}

function hasDefault(node: SchemaNode): boolean {
  return 'default' in node && node.default !== undefined;
}

function defaultText(node: SchemaNode, required: boolean | undefined): string | undefined {
  if (required) return undefined;
  if (node.defaultDoc) return `- ${node.defaultDoc}`;
  if (hasDefault(node)) return JSON.stringify((node as { default: unknown }).default);
  return '- none';
}

function typeOf(node: SchemaNode, resolved: boolean): string {
  switch (node.type) {
    case 'string':
      return node.enum ? node.enum.map((e) => JSON.stringify(e)).join(' | ') : 'string';
    case 'integer':
      return 'number';
    case 'boolean':
      return 'boolean';
    case 'quantity':
      return 'string | number';
    case 'int-or-string':
      return 'number | string';
    case 'object':
      if (node.preserveUnknownFields) return node.tsType ?? 'Record<string, unknown>';
      return resolved ? `Resolved${node.typeName}` : node.typeName;
    case 'array': {
      const item = typeOf(node.items, resolved);
      return item.includes('|') ? `ReadonlyArray<${item}>` : `readonly ${item}[]`;
    }
    case 'map':
      return `Readonly<Record<string, ${typeOf(node.values, resolved)}>>`;
  }
}

function docComment(description: string, defaultValue: string | undefined, indent: string): string[] {
  const words = description.split(/\s+/).filter(Boolean);
  const lines: string[] = [];
  let line = '';
  for (const w of words) {
    if (line && line.length + w.length + 1 > 96) {
      lines.push(line);
      line = w;
    } else {
      line = line ? `${line} ${w}` : w;
    }
  }
  if (line) lines.push(line);
  const body = lines.map((l) => `${indent} * ${l.replace(/\*\//g, '*\\/')}`);
  if (defaultValue !== undefined) body.push(`${indent} * @default ${defaultValue}`);
  return [`${indent}/**`, ...body, `${indent} */`];
}
