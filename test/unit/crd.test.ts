import assert from 'node:assert/strict';
import { APP, MYSQL_CLUSTER, crdManifest } from '../../constructs/index.js';
import type { JsonSchemaProps } from '../../constructs/schema/openapi.js';

/** Every property path in a schema that has no description (what `kubectl explain` would show empty). */
function undocumented(schema: JsonSchemaProps, path: string): string[] {
  const missing: string[] = [];
  for (const [name, child] of Object.entries(schema.properties ?? {})) {
    const p = `${path}.${name}`;
    if (!child.description && name !== 'metadata') missing.push(p);
    missing.push(...undocumented(child, p));
  }
  if (schema.items) missing.push(...undocumented(schema.items, `${path}[]`));
  if (schema.additionalProperties) missing.push(...undocumented(schema.additionalProperties, `${path}{}`));
  return missing;
}

for (const kind of [APP, MYSQL_CLUSTER]) {
  describe(`${kind.kind} CRD`, () => {
    const crd = crdManifest(kind);
    const spec = crd.spec as {
      group: string;
      names: Record<string, unknown>;
      scope: string;
      versions: {
        name: string;
        served: boolean;
        storage: boolean;
        schema: { openAPIV3Schema: JsonSchemaProps };
        subresources: Record<string, unknown>;
        additionalPrinterColumns: { name: string; jsonPath: string }[];
      }[];
    };
    const version = spec.versions[0];
    const schema = version?.schema.openAPIV3Schema;

    it('is named <plural>.recon8s.dev and serves v1alpha1 as the storage version', () => {
      assert.equal(crd.metadata.name, `${kind.plural}.recon8s.dev`);
      assert.equal(spec.group, 'recon8s.dev');
      assert.equal(spec.scope, 'Namespaced');
      assert.equal(spec.versions.length, 1);
      assert.deepEqual([version?.name, version?.served, version?.storage], ['v1alpha1', true, true]);
    });

    it('has short names and the recon8s category', () => {
      assert.equal(spec.names.kind, kind.kind);
      assert.ok((spec.names.shortNames as string[]).length > 0);
      assert.deepEqual(spec.names.categories, ['recon8s']);
    });

    it('has the status and scale subresources', () => {
      assert.deepEqual(version?.subresources.status, {});
      assert.deepEqual(version?.subresources.scale, {
        specReplicasPath: '.spec.replicas',
        statusReplicasPath: '.status.replicas',
        labelSelectorPath: '.status.selector',
      });
    });

    it('has printer columns for readiness and age', () => {
      const names = version?.additionalPrinterColumns.map((c) => c.name) ?? [];
      assert.ok(names.includes('Ready') && names.includes('Age') && names.includes('Status'), names.join(','));
    });

    it('describes every field, so kubectl explain is useful', () => {
      assert.ok(schema);
      assert.deepEqual(undocumented(schema, ''), []);
    });

    it('requires a spec and limits the name so the children names fit', () => {
      assert.deepEqual(schema?.required, ['spec']);
      const rules = schema?.['x-kubernetes-validations']?.map((r) => r.rule) ?? [];
      assert.ok(rules.includes(`self.metadata.name.size() <= ${kind.maxNameLength}`), rules.join('\n'));
    });

    it('is an ApplySet parent type', () => {
      assert.equal(crd.metadata.labels['applyset.kubernetes.io/is-parent-type'], 'true');
    });
  });
}

describe('MySQLCluster CRD rules', () => {
  const crd = crdManifest(MYSQL_CLUSTER);
  const spec = (crd.spec as { versions: { schema: { openAPIV3Schema: JsonSchemaProps } }[] }).versions[0]?.schema
    .openAPIV3Schema.properties?.spec;

  it('refuses end-of-life versions at admission with a message saying why', () => {
    const version = spec?.properties?.version;
    // Not a schema enum: an enum failure would stop the API server before the rule that says why.
    assert.equal(version?.enum, undefined);
    const rules = version?.['x-kubernetes-validations'] ?? [];
    assert.deepEqual(rules[0], {
      rule: "self in ['8.4', '9.7']",
      message: 'version must be a supported MySQL LTS release: "8.4" or "9.7"',
    });
    assert.equal(rules[1]?.rule, "!(self in ['5.7', '8.0'])");
    assert.match(rules[1]?.message ?? '', /end-of-life/);
  });

  it('refuses a placement or nodeLoss the construct would refuse, by schema enums and bounds', () => {
    const placement = spec?.properties?.placement?.properties;
    assert.deepEqual(placement?.spreadMembers?.enum, ['Preferred', 'Required']);
    assert.equal(placement?.spreadMembers?.default, 'Preferred');
    assert.deepEqual(placement?.zoneSpread?.enum, ['None', 'Preferred', 'Required']);
    assert.equal(placement?.zoneSpread?.default, 'None');
    const recoverAfter = spec?.properties?.nodeLoss?.properties?.recoverAfterSeconds;
    assert.deepEqual([recoverAfter?.minimum, recoverAfter?.maximum, recoverAfter?.default], [60, 604800, undefined]);
  });

  it('forbids shrinking storage, changing storageClassName and downgrading', () => {
    const storageRules = spec?.properties?.storage?.['x-kubernetes-validations']?.map((r) => r.message) ?? [];
    assert.ok(storageRules.some((m) => /never shrink/.test(m)));
    assert.ok(storageRules.some((m) => /storageClassName is immutable/.test(m)));
    const versionRules = spec?.properties?.version?.['x-kubernetes-validations']?.map((r) => r.rule) ?? [];
    assert.ok(versionRules.includes("!(oldSelf == '9.7' && self in ['8.4'])"), versionRules.join('\n'));
  });
});
