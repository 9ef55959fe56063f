import type { KindDefinition, SchemaNode } from './schema.js';

/**
 * A Markdown reference of a kind's spec: one row per field (dotted path, type, default, description),
 * generated from the same definition as the CRD and the props types, so docs/reference/ cannot drift.
 */
export function referenceMarkdown(kind: KindDefinition): string {
  const rows: string[] = [];
  const walk = (node: SchemaNode, path: string, required: boolean): void => {
    if (path)
      rows.push(
        `| \`${path}\` | ${typeName(node)}${required ? ' (required)' : ''} | ${defaultOf(node, required)} | ${escape(node.description)} |`,
      );
    if (node.type === 'object' && !node.preserveUnknownFields) {
      for (const [name, p] of Object.entries(node.properties))
        walk(p.node, path ? `${path}.${name}` : name, Boolean(p.required));
    } else if (node.type === 'array' && node.items.type === 'object' && !node.items.preserveUnknownFields) {
      for (const [name, p] of Object.entries(node.items.properties))
        walk(p.node, `${path}[].${name}`, Boolean(p.required));
    }
  };
  walk(kind.spec, '', false);
  return [
    `## ${kind.kind} (\`${kind.group}/${kind.version}\`)`,
    '',
    '| Field | Type | Default | Description |',
    '| --- | --- | --- | --- |',
    ...rows,
  ].join('\n');
}

function typeName(node: SchemaNode): string {
  switch (node.type) {
    case 'string':
      return node.enum ? node.enum.map((e) => `\`${e}\``).join(' \\| ') : 'string';
    case 'integer':
      return node.minimum !== undefined && node.maximum !== undefined
        ? `integer ${node.minimum}..${node.maximum}`
        : 'integer';
    case 'boolean':
      return 'boolean';
    case 'quantity':
      return 'quantity';
    case 'int-or-string':
      return 'int or string';
    case 'object':
      return 'object';
    case 'array':
      return node.items.type === 'object' ? 'list of objects' : `list of ${typeName(node.items)}`;
    case 'map':
      return 'map of string';
  }
}

function defaultOf(node: SchemaNode, required: boolean): string {
  if (required) return '';
  if (node.defaultDoc) return escape(node.defaultDoc);
  if ('default' in node && node.default !== undefined) return `\`${JSON.stringify(node.default)}\``;
  return '';
}

function escape(s: string): string {
  return s.replace(/\|/g, '\\|').replace(/\n/g, ' ');
}
