import assert from 'node:assert/strict';
import * as s from '../../constructs/schema/schema.js';
import { toOpenApi } from '../../constructs/schema/openapi.js';
import { applyDefaults, formatProblem, validate } from '../../constructs/schema/validate.js';
import { generateTypes } from '../../constructs/schema/codegen.js';
import { generatedReference, generatedSpecTypes } from '../../constructs/generated-sources.js';
import { readFileSync } from 'node:fs';

const widget = s.object({
  typeName: 'Widget',
  description: 'A widget.',
  properties: {
    size: s.required(s.integer({ description: 'How big.', minimum: 1, maximum: 9 })),
    colour: s.optional(s.string({ description: 'Its colour.', enum: ['red', 'blue'], default: 'red' })),
    tags: s.optional(
      s.map({
        description: 'Tags.',
        values: s.string({ description: 'A tag.' }),
        keyPattern: '^[a-z]+$',
        keyPatternHint: 'lower-case letters',
      }),
    ),
    parts: s.optional(
      s.array({
        description: 'Parts.',
        items: s.object({
          typeName: 'Part',
          description: 'A part.',
          properties: {
            name: s.required(s.string({ description: 'Name.' })),
            count: s.optional(s.integer({ description: 'How many.', default: 1 })),
          },
        }),
        listType: 'map',
        listMapKeys: ['name'],
      }),
    ),
    memory: s.optional(s.quantity({ description: 'Memory.' })),
  },
  rules: [
    s.rule<{ size: number; colour?: string }>(
      "self.size < 5 || self.colour == 'blue'",
      'colour blue when size is 5 or more',
      (v) => v.size < 5 || v.colour === 'blue',
      { fieldPath: '.colour' },
    ),
  ],
});

describe('spec schema', () => {
  describe('defaults', () => {
    it('fills absent fields and nested defaults inside present objects only', () => {
      const out = applyDefaults(widget, { size: 2, parts: [{ name: 'a' }, { name: 'b', count: 3 }] });
      assert.deepEqual(out, {
        size: 2,
        colour: 'red',
        parts: [
          { name: 'a', count: 1 },
          { name: 'b', count: 3 },
        ],
      });
    });

    it('never changes its input', () => {
      const input = { size: 2 };
      applyDefaults(widget, input);
      assert.deepEqual(input, { size: 2 });
    });
  });

  describe('validation', () => {
    it('accepts a valid value', () => {
      assert.deepEqual(
        validate(widget, applyDefaults(widget, { size: 3, memory: '512Mi', tags: { a: 'x' } }), 'spec'),
        [],
      );
    });

    it('fails on every problem at once, naming field, value and expectation', () => {
      const problems = validate(
        widget,
        {
          size: 12,
          colour: 'green',
          extra: true,
          parts: [{ name: 'a' }, { name: 'a' }],
          memory: 'lots',
          tags: { Bad: 'x' },
        },
        'spec',
      );
      const text = problems.map(formatProblem);
      assert.ok(text.includes('spec.size: got 12, expected an integer from 1 to 9'), text.join('\n'));
      assert.ok(text.includes('spec.colour: got "green", expected one of "red", "blue"'), text.join('\n'));
      assert.ok(
        text.some((t) => t.startsWith('spec.extra: got true, expected no such field; known fields: size, colour')),
        text.join('\n'),
      );
      assert.ok(
        text.some((t) => t.startsWith('spec.parts[1]: got {"name":"a"}, expected a unique name')),
        text.join('\n'),
      );
      assert.ok(
        text.some((t) => t.startsWith('spec.memory: got "lots", expected a Kubernetes quantity')),
        text.join('\n'),
      );
      assert.ok(
        text.some((t) => t.startsWith('spec.tags["Bad"]: got "Bad", expected a key that is lower-case letters')),
        text.join('\n'),
      );
    });

    it('fails when a required field is missing', () => {
      assert.deepEqual(validate(widget, {}, 'spec').map(formatProblem), [
        'spec.size: missing, expected an integer from 1 to 9 (required)',
      ]);
    });

    it('fails a cross-field rule with its message at its field', () => {
      assert.deepEqual(validate(widget, { size: 7, colour: 'red' }, 'spec').map(formatProblem), [
        'spec.colour: got "red", expected colour blue when size is 5 or more',
      ]);
    });

    it('fails on wrong types without running rules on them', () => {
      assert.deepEqual(validate(widget, { size: 'big' }, 'spec').map(formatProblem), [
        'spec.size: got "big", expected an integer from 1 to 9',
      ]);
    });
  });

  describe('OpenAPI', () => {
    it('writes a structural schema with descriptions, defaults, enums, ranges, list keys and CEL', () => {
      const schema = toOpenApi(widget);
      assert.deepEqual(schema.required, ['size']);
      assert.equal(schema.description, 'A widget.');
      assert.deepEqual(schema.properties?.size, {
        type: 'integer',
        format: 'int32',
        minimum: 1,
        maximum: 9,
        description: 'How big.',
      });
      assert.deepEqual(schema.properties?.colour, {
        type: 'string',
        enum: ['red', 'blue'],
        default: 'red',
        description: 'Its colour.',
      });
      assert.equal(schema.properties?.parts?.['x-kubernetes-list-type'], 'map');
      assert.deepEqual(schema.properties?.parts?.['x-kubernetes-list-map-keys'], ['name']);
      assert.equal(schema.properties?.memory?.['x-kubernetes-int-or-string'], true);
      assert.deepEqual(schema['x-kubernetes-validations'], [
        {
          rule: "self.size < 5 || self.colour == 'blue'",
          message: 'colour blue when size is 5 or more',
          fieldPath: '.colour',
        },
      ]);
      assert.deepEqual(schema.properties?.tags?.['x-kubernetes-validations'], [
        { rule: "self.all(k, k.matches('^[a-z]+$'))", message: 'every key must be lower-case letters' },
      ]);
    });
  });

  describe('generated types', () => {
    it('marks defaulted fields optional in props and present in the resolved twin', () => {
      const text = generateTypes([widget], { source: 'test' });
      assert.match(
        text,
        /export interface Widget \{[^}]*readonly size: number;[^}]*@default "red"\n {3}\*\/\n {2}readonly colour\?: "red" \| "blue";/s,
      );
      assert.match(text, /export interface ResolvedWidget \{[^}]*readonly colour: "red" \| "blue";/s);
    });

    it('are up to date with the spec definitions (run npm run codegen after changing a spec)', () => {
      for (const { path, text } of generatedSpecTypes()) {
        assert.equal(
          readFileSync(new URL(`../../${path}`, import.meta.url), 'utf8'),
          text,
          `${path} is stale: run npm run codegen`,
        );
      }
    });
  });
});

describe('the spec reference in docs/reference/', () => {
  for (const { path, text } of generatedReference()) {
    it(`${path} is up to date with the spec definitions (run npm run codegen after changing a spec)`, () => {
      assert.equal(
        readFileSync(new URL(`../../${path}`, import.meta.url), 'utf8'),
        text,
        `${path} is stale: run npm run codegen`,
      );
    });
  }

  it('lists every field of each kind, nested ones by their dotted path', () => {
    const [app, mysql] = generatedReference();
    assert.match(app?.text ?? '', /^\| `image` \| string \(required\) \|/m);
    assert.match(app?.text ?? '', /^\| `env\[\]\.name` \|/m);
    assert.match(mysql?.text ?? '', /^\| `backup\.s3\.bucket` \|/m);
  });
});
