import type { ArrayNode, MapNode, ObjectNode, SchemaNode } from './schema.js';
import { BYTES_EXPECTED, BYTE_UNIT_PATTERN, QUANTITY_PATTERN, isPositiveQuantity } from './schema.js';

/** One thing wrong with an input: where, what was there, and what was wanted. */
export interface Problem {
  /** The path of the field, as `kubectl explain` would name it (`spec.ports[0].port`). */
  readonly field: string;
  /** What was received (absent when the field was missing). */
  readonly value?: unknown;
  /** What the field must be, in words. */
  readonly expected: string;
}

/** The input cannot be rendered; every problem found is listed, not just the first. */
export class InvalidSpecError extends Error {
  constructor(
    readonly subject: string,
    readonly problems: readonly Problem[],
  ) {
    super(`${subject} is invalid:\n${problems.map((p) => `  - ${formatProblem(p)}`).join('\n')}`);
    this.name = 'InvalidSpecError';
  }
}

export function formatProblem(p: Problem): string {
  const got = 'value' in p && p.value !== undefined ? `got ${show(p.value)}` : 'missing';
  return `${p.field}: ${got}, expected ${p.expected}`;
}

/** A short rendering of a received value for an error message. */
export function show(value: unknown): string {
  let text: string;
  try {
    text = JSON.stringify(value) ?? String(value);
  } catch {
    text = String(value);
  }
  return text.length > 80 ? `${text.slice(0, 77)}...` : text;
}

/**
 * Returns a copy of `value` with the schema's defaults filled in, the way the API server defaults a
 * custom resource: a default applies where a field is absent, and nested defaults apply only inside
 * objects that exist (after their own default, if any, was applied).
 */
export function applyDefaults(node: SchemaNode, value: unknown): unknown {
  if (value === undefined) {
    if (!('default' in node) || node.default === undefined) return undefined;
    value = structuredClone(node.default);
  }
  if (node.type === 'object' && isPlainObject(value) && !node.preserveUnknownFields) {
    const out: Record<string, unknown> = { ...value };
    for (const [name, prop] of Object.entries(node.properties)) {
      const v = applyDefaults(prop.node, out[name]);
      if (v !== undefined) out[name] = v;
    }
    return out;
  }
  if (node.type === 'array' && Array.isArray(value)) return value.map((v) => applyDefaults(node.items, v));
  if (node.type === 'map' && isPlainObject(value)) {
    return Object.fromEntries(Object.entries(value).map(([k, v]) => [k, applyDefaults(node.values, v)]));
  }
  return value;
}

/** Every way `value` breaks the schema (types, ranges, patterns, required and unknown fields, rules). */
export function validate(node: SchemaNode, value: unknown, field: string): Problem[] {
  const problems: Problem[] = [];
  check(node, value, field, problems);
  return problems;
}

function check(node: SchemaNode, value: unknown, field: string, out: Problem[]): void {
  const before = out.length;
  switch (node.type) {
    case 'string':
      if (typeof value !== 'string') {
        out.push({ field, value, expected: 'a string' });
        return;
      }
      if (node.enum && !node.enum.includes(value))
        out.push({ field, value, expected: `one of ${node.enum.map((e) => JSON.stringify(e)).join(', ')}` });
      if (node.pattern && !new RegExp(node.pattern).test(value))
        out.push({ field, value, expected: node.patternHint ?? `a string matching ${node.pattern}` });
      if (node.minLength !== undefined && value.length < node.minLength)
        out.push({ field, value, expected: `at least ${node.minLength} character(s)` });
      if (node.maxLength !== undefined && value.length > node.maxLength)
        out.push({ field, value, expected: `at most ${node.maxLength} characters` });
      break;
    case 'integer':
      if (typeof value !== 'number' || !Number.isInteger(value)) {
        out.push({ field, value, expected: describeInteger(node.minimum, node.maximum) });
        return;
      }
      if (
        (node.minimum !== undefined && value < node.minimum) ||
        (node.maximum !== undefined && value > node.maximum)
      ) {
        out.push({ field, value, expected: describeInteger(node.minimum, node.maximum) });
      }
      break;
    case 'boolean':
      if (typeof value !== 'boolean') out.push({ field, value, expected: 'true or false' });
      break;
    case 'quantity':
      if (!(
        (typeof value === 'number' && Number.isInteger(value) && value >= 0) ||
        (typeof value === 'string' && new RegExp(QUANTITY_PATTERN).test(value))
      )) {
        out.push({ field, value, expected: 'a Kubernetes quantity such as "500m", "256Mi" or "10Gi"' });
      } else if (node.bytes && !(typeof value === 'string' && new RegExp(BYTE_UNIT_PATTERN).test(value))) {
        out.push({ field, value, expected: BYTES_EXPECTED });
      } else if (node.positive && !isPositiveQuantity(value)) {
        out.push({ field, value, expected: 'a quantity greater than zero, such as "10Gi"' });
      }
      break;
    case 'int-or-string':
      if (!(typeof value === 'string' && value.length > 0) && !(typeof value === 'number' && Number.isInteger(value))) {
        out.push({ field, value, expected: 'a port number or a port name' });
      }
      break;
    case 'object':
      checkObject(node, value, field, out);
      break;
    case 'array':
      checkArray(node, value, field, out);
      break;
    case 'map':
      checkMap(node, value, field, out);
      break;
  }
  // Rules judge a well-formed value only: a type error already says what is wrong. A scalar of the
  // right type is well-formed enough (a rule may say more than an enum can: why a value is refused).
  const wellFormed = out.length === before || isScalarOfType(node, value);
  if (wellFormed && node.rules) {
    for (const r of node.rules) {
      if (!r.check) continue;
      let ok: boolean;
      try {
        ok = r.check(value as never);
      } catch {
        ok = false;
      }
      if (!ok) {
        const sub = r.fieldPath ? `${field}${r.fieldPath}` : field;
        out.push({ field: sub, value: r.fieldPath ? pick(value, r.fieldPath) : value, expected: r.message });
      }
    }
  }
}

function isScalarOfType(node: SchemaNode, value: unknown): boolean {
  return (node.type === 'string' && typeof value === 'string') || (node.type === 'integer' && Number.isInteger(value));
}

function checkObject(node: ObjectNode, value: unknown, field: string, out: Problem[]): void {
  if (!isPlainObject(value)) {
    out.push({ field, value, expected: 'an object' });
    return;
  }
  if (node.preserveUnknownFields) return;
  for (const [name, prop] of Object.entries(node.properties)) {
    const v = value[name];
    if (v === undefined) {
      if (prop.required) out.push({ field: join(field, name), expected: `${describeNode(prop.node)} (required)` });
      continue;
    }
    check(prop.node, v, join(field, name), out);
  }
  const known = Object.keys(node.properties);
  for (const name of Object.keys(value)) {
    if (!(name in node.properties) && value[name] !== undefined) {
      out.push({
        field: join(field, name),
        value: value[name],
        expected: `no such field; known fields: ${known.join(', ')}`,
      });
    }
  }
}

function checkArray(node: ArrayNode, value: unknown, field: string, out: Problem[]): void {
  if (!Array.isArray(value)) {
    out.push({ field, value, expected: `a list of ${describeNode(node.items)}` });
    return;
  }
  if (node.minItems !== undefined && value.length < node.minItems)
    out.push({ field, value, expected: `at least ${node.minItems} item(s)` });
  if (node.maxItems !== undefined && value.length > node.maxItems)
    out.push({ field, value: `${value.length} items`, expected: `at most ${node.maxItems} items` });
  value.forEach((item, i) => check(node.items, item, `${field}[${i}]`, out));
  if (node.listType === 'map' && node.listMapKeys) {
    const seen = new Map<string, number>();
    value.forEach((item, i) => {
      if (!isPlainObject(item)) return;
      const key = JSON.stringify(node.listMapKeys?.map((k) => item[k]));
      const first = seen.get(key);
      if (first !== undefined) {
        out.push({
          field: `${field}[${i}]`,
          value: Object.fromEntries(node.listMapKeys?.map((k) => [k, item[k]]) ?? []),
          expected: `a unique ${node.listMapKeys?.join('/')} (item ${first} has the same)`,
        });
      } else {
        seen.set(key, i);
      }
    });
  }
  if (node.listType === 'set') {
    const seen = new Set<string>();
    value.forEach((item, i) => {
      const key = JSON.stringify(item);
      if (seen.has(key)) out.push({ field: `${field}[${i}]`, value: item, expected: 'no duplicates in this list' });
      seen.add(key);
    });
  }
}

function checkMap(node: MapNode, value: unknown, field: string, out: Problem[]): void {
  if (!isPlainObject(value)) {
    out.push({ field, value, expected: 'a map of keys to values' });
    return;
  }
  const keys = Object.keys(value);
  if (node.maxProperties !== undefined && keys.length > node.maxProperties)
    out.push({ field, value: `${keys.length} keys`, expected: `at most ${node.maxProperties} keys` });
  const keyPattern = node.keyPattern ? new RegExp(node.keyPattern) : undefined;
  for (const k of keys) {
    if (keyPattern && !keyPattern.test(k))
      out.push({
        field: `${field}[${JSON.stringify(k)}]`,
        value: k,
        expected: `a key that is ${node.keyPatternHint ?? `a string matching ${node.keyPattern}`}`,
      });
    check(node.values, value[k], `${field}[${JSON.stringify(k)}]`, out);
  }
}

function describeInteger(min?: number, max?: number): string {
  if (min !== undefined && max !== undefined) return `an integer from ${min} to ${max}`;
  if (min !== undefined) return `an integer of at least ${min}`;
  if (max !== undefined) return `an integer of at most ${max}`;
  return 'an integer';
}

/** What a node accepts, in a few words. */
export function describeNode(node: SchemaNode): string {
  switch (node.type) {
    case 'string':
      return node.enum
        ? `one of ${node.enum.map((e) => JSON.stringify(e)).join(', ')}`
        : (node.patternHint ?? 'a string');
    case 'integer':
      return describeInteger(node.minimum, node.maximum);
    case 'boolean':
      return 'true or false';
    case 'quantity':
      return 'a Kubernetes quantity';
    case 'int-or-string':
      return 'a port number or name';
    case 'object':
      return 'an object';
    case 'array':
      return `a list of ${describeNode(node.items)}`;
    case 'map':
      return 'a map';
  }
}

function join(field: string, name: string): string {
  return field ? `${field}.${name}` : name;
}

function pick(value: unknown, path: string): unknown {
  let v: unknown = value;
  for (const part of path.split('.').filter(Boolean)) v = isPlainObject(v) ? v[part] : undefined;
  return v;
}

export function isPlainObject(v: unknown): v is Record<string, unknown> {
  return typeof v === 'object' && v !== null && !Array.isArray(v);
}
