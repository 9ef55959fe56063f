import type { ObjectNode, Rule, SchemaNode } from './schema.js';
import { BYTES_EXPECTED, BYTE_UNIT_PATTERN, QUANTITY_PATTERN } from './schema.js';

/** A structural OpenAPI v3 schema as `apiextensions.k8s.io/v1` expects it (JSONSchemaProps). */
export interface JsonSchemaProps {
  type?: string;
  description?: string;
  properties?: Record<string, JsonSchemaProps>;
  required?: string[];
  items?: JsonSchemaProps;
  additionalProperties?: JsonSchemaProps;
  enum?: string[];
  pattern?: string;
  minLength?: number;
  maxLength?: number;
  minimum?: number;
  maximum?: number;
  minItems?: number;
  maxItems?: number;
  maxProperties?: number;
  default?: unknown;
  format?: string;
  anyOf?: JsonSchemaProps[];
  'x-kubernetes-int-or-string'?: true;
  'x-kubernetes-preserve-unknown-fields'?: true;
  'x-kubernetes-list-type'?: string;
  'x-kubernetes-list-map-keys'?: string[];
  'x-kubernetes-validations'?: ValidationRule[];
}

export interface ValidationRule {
  rule: string;
  message: string;
  fieldPath?: string;
  reason?: string;
}

/** Converts one node of a spec definition into the CRD's structural schema for it. */
export function toOpenApi(node: SchemaNode): JsonSchemaProps {
  const out = convert(node);
  out.description = node.description;
  const rules = validationsOf(node.rules);
  if (rules) out['x-kubernetes-validations'] = [...(out['x-kubernetes-validations'] ?? []), ...rules];
  return out;
}

function convert(node: SchemaNode): JsonSchemaProps {
  switch (node.type) {
    case 'string': {
      const enumRule =
        node.enum && node.enumAsRuleMessage
          ? [{ rule: `self in [${node.enum.map(celString).join(', ')}]`, message: node.enumAsRuleMessage }]
          : undefined;
      return compact({
        type: 'string',
        enum: node.enum && !enumRule ? [...node.enum] : undefined,
        pattern: node.pattern,
        minLength: node.minLength, // A bound keeps the rule cheap enough for the API server cost estimate.
        maxLength: node.maxLength ?? (enumRule ? 64 : undefined),
        default: node.default,
        'x-kubernetes-validations': enumRule,
      });
    }
    case 'integer':
      // Kubernetes integers are int64 at most; int32 says what every field we map into really takes.
      return compact({
        type: 'integer',
        format: 'int32',
        minimum: node.minimum,
        maximum: node.maximum,
        default: node.default,
      });
    case 'boolean':
      return compact({ type: 'boolean', default: node.default });
    case 'quantity':
      // A structural int-or-string allows exactly anyOf [integer, string]; the pattern (which only
      // constrains strings) sits beside it.
      return compact({
        'x-kubernetes-int-or-string': true,
        anyOf: [{ type: 'integer' }, { type: 'string' }],
        pattern: QUANTITY_PATTERN,
        default: node.default,
        'x-kubernetes-validations': nonEmpty([
          ...(node.bytes
            ? [
                {
                  rule: `type(self) == string && self.matches('${BYTE_UNIT_PATTERN}')`,
                  message: `must be ${BYTES_EXPECTED}`,
                },
              ]
            : []),
          ...(node.positive
            ? [
                {
                  rule: "!isQuantity(string(self)) || quantity(string(self)).isGreaterThan(quantity('0'))",
                  message: 'must be a quantity greater than zero, such as "10Gi"',
                },
              ]
            : []),
        ]),
      });
    case 'int-or-string':
      return compact({
        'x-kubernetes-int-or-string': true,
        anyOf: [{ type: 'integer' }, { type: 'string' }],
        default: node.default,
      });
    case 'object':
      return objectSchema(node);
    case 'array':
      return compact({
        type: 'array',
        items: toOpenApi(node.items),
        minItems: node.minItems,
        maxItems: node.maxItems,
        'x-kubernetes-list-type': node.listType,
        'x-kubernetes-list-map-keys': node.listMapKeys ? [...node.listMapKeys] : undefined,
        default: node.default,
      });
    case 'map': {
      const keyRules: ValidationRule[] = node.keyPattern
        ? [
            {
              rule: `self.all(k, k.matches(${celString(node.keyPattern)}))`,
              message: `every key must be ${node.keyPatternHint ?? `a string matching ${node.keyPattern}`}`,
            },
          ]
        : [];
      return compact({
        type: 'object',
        additionalProperties: toOpenApi(node.values),
        maxProperties: node.maxProperties,
        default: node.default,
        'x-kubernetes-validations': keyRules.length ? keyRules : undefined,
      });
    }
  }
}

function objectSchema(node: ObjectNode): JsonSchemaProps {
  if (node.preserveUnknownFields) {
    return { type: 'object', 'x-kubernetes-preserve-unknown-fields': true };
  }
  const properties: Record<string, JsonSchemaProps> = {};
  const required: string[] = [];
  for (const [name, prop] of Object.entries(node.properties)) {
    properties[name] = toOpenApi(prop.node);
    if (prop.required) required.push(name);
  }
  return compact({
    type: 'object',
    properties,
    required: required.length ? required : undefined,
    default: node.default,
  });
}

function validationsOf(rules: readonly Rule[] | undefined): ValidationRule[] | undefined {
  const withCel = (rules ?? []).filter((r): r is Rule & { cel: string } => r.cel !== undefined);
  if (!withCel.length) return undefined;
  return withCel.map((r) => compact({ rule: r.cel, message: r.message, fieldPath: r.fieldPath, reason: r.reason }));
}

/** A CEL string literal. */
export function celString(s: string): string {
  return `'${s.replace(/\\/g, '\\\\').replace(/'/g, "\\'")}'`;
}

function compact<T extends object>(o: T): T {
  return Object.fromEntries(Object.entries(o).filter(([, v]) => v !== undefined)) as T;
}

function nonEmpty<T>(list: T[]): T[] | undefined {
  return list.length > 0 ? list : undefined;
}
