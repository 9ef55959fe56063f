import type { ConditionalNameLimit, KindDefinition, ObjectNode } from './schema.js';
import { DNS_1035_LABEL_PATTERN } from './schema.js';
import type { Problem } from './validate.js';
import { applyDefaults, InvalidSpecError, validate } from './validate.js';

/**
 * Validates props (a CR's spec) against the kind's definition and returns them with every default
 * applied — once, up front, reporting every problem together. What a construct renders from.
 */
export function resolveSpec<T>(kind: KindDefinition, name: string, props: unknown): T {
  const defaulted = applyDefaults(kind.spec, props ?? {});
  const problems = [...nameProblems(kind, name, defaulted), ...validate(kind.spec, defaulted, 'spec')];
  if (problems.length > 0) throw new InvalidSpecError(`${kind.kind} "${name}"`, problems);
  return deepFreeze(defaulted) as T;
}

/** Problems with an object's name: the children's names are derived from it. */
export function nameProblems(kind: KindDefinition, name: string, spec?: unknown): Problem[] {
  const problems: Problem[] = [];
  if (!new RegExp(DNS_1035_LABEL_PATTERN).test(name)) {
    problems.push({
      field: 'metadata.name',
      value: name,
      expected:
        'a DNS-1035 label (lower-case letters, digits and "-", starting with a letter): the Services are named after it',
    });
  }
  if (name.length > kind.maxNameLength) {
    problems.push({
      field: 'metadata.name',
      value: name,
      expected: `at most ${kind.maxNameLength} characters, so that the names of the ${kind.kind}'s children fit`,
    });
  } else if (spec !== undefined) {
    for (const limit of kind.conditionalNameLimits ?? []) {
      if (name.length > limit.maxLength && limit.when(spec as never)) {
        problems.push({ field: 'metadata.name', value: name, expected: conditionalLimitMessage(limit) });
      }
    }
  }
  return problems;
}

/**
 * The CEL rules on the root of the CRD schema that keep names short and DNS-safe. (No fieldPath: the
 * API server only accepts paths into the declared schema, and metadata is not declared.)
 */
export function nameRules(kind: KindDefinition): { rule: string; message: string }[] {
  return [
    {
      rule: `self.metadata.name.size() <= ${kind.maxNameLength}`,
      message: `metadata.name must be at most ${kind.maxNameLength} characters, so that the names of the ${kind.kind}'s children fit`,
    },
    {
      rule: `self.metadata.name.matches('${DNS_1035_LABEL_PATTERN}')`,
      message:
        'metadata.name must be a DNS-1035 label (lower-case letters, digits and "-", starting with a letter): the Services are named after it',
    },
    ...(kind.conditionalNameLimits ?? []).map((limit) => ({
      rule: `!(${limit.whenCel}) || self.metadata.name.size() <= ${limit.maxLength}`,
      message: `metadata.name must be ${conditionalLimitMessage(limit)}`,
    })),
  ];
}

function conditionalLimitMessage(limit: ConditionalNameLimit): string {
  return `at most ${limit.maxLength} characters, so that ${limit.because} fits`;
}

export function specNode(kind: KindDefinition): ObjectNode {
  return kind.spec;
}

function deepFreeze<T>(o: T): T {
  if (typeof o === 'object' && o !== null && !Object.isFrozen(o)) {
    Object.freeze(o);
    for (const v of Object.values(o)) deepFreeze(v);
  }
  return o;
}
