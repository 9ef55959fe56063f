import { ApiObject } from 'cdk8s';
import { Construct } from 'constructs';
import { APP } from './app/spec.js';
import { MYSQL_CLUSTER } from './mysql/spec.js';
import type { JsonSchemaProps } from './schema/openapi.js';
import { toOpenApi } from './schema/openapi.js';
import type { KindDefinition } from './schema/schema.js';
import { nameRules } from './schema/kind.js';

/** Marks a CRD as a kind whose objects may be ApplySet parents (KEP-3659), so `kubectl apply --prune --applyset` understands our sets. */
export const APPLYSET_PARENT_TYPE_LABEL = 'applyset.kubernetes.io/is-parent-type';

export interface CustomResourceDefinitionProps {
  /** The kind, as defined once in its spec module (e.g. `APP`, `MYSQL_CLUSTER`). */
  readonly kind: KindDefinition;
}

/**
 * The CustomResourceDefinition of one recon8s kind, generated from the same definition as the
 * construct's props and the runtime validation: descriptions for `kubectl explain`, defaults, enums,
 * ranges and CEL rules; the status and scale subresources; printer columns, short names and the
 * `recon8s` category.
 */
export class CustomResourceDefinition extends Construct {
  readonly apiObject: ApiObject;

  constructor(scope: Construct, id: string, props: CustomResourceDefinitionProps) {
    super(scope, id);
    this.apiObject = new ApiObject(this, 'Resource', crdManifest(props.kind));
  }
}

/** Both recon8s CRDs: what a cluster needs before App and MySQLCluster resources can be created. */
export class Recon8sCrds extends Construct {
  readonly app: CustomResourceDefinition;
  readonly mysqlCluster: CustomResourceDefinition;

  constructor(scope: Construct, id: string) {
    super(scope, id);
    this.app = new CustomResourceDefinition(this, 'App', { kind: APP });
    this.mysqlCluster = new CustomResourceDefinition(this, 'MySQLCluster', { kind: MYSQL_CLUSTER });
  }
}

/** The CRD of a kind as a plain manifest (`apiextensions.k8s.io/v1`). */
export function crdManifest(kind: KindDefinition): {
  apiVersion: string;
  kind: string;
  metadata: { name: string; labels: Record<string, string> };
  spec: Record<string, unknown>;
} {
  const root: JsonSchemaProps = {
    type: 'object',
    description: kind.description,
    required: ['spec'],
    properties: {
      apiVersion: {
        type: 'string',
        description: 'APIVersion defines the versioned schema of this representation of an object.',
      },
      kind: {
        type: 'string',
        description: 'Kind is a string value representing the REST resource this object represents.',
      },
      metadata: { type: 'object' },
      spec: toOpenApi(kind.spec),
      status: toOpenApi(kind.status),
    },
    'x-kubernetes-validations': nameRules(kind),
  };
  return {
    apiVersion: 'apiextensions.k8s.io/v1',
    kind: 'CustomResourceDefinition',
    metadata: {
      name: `${kind.plural}.${kind.group}`,
      labels: { 'app.kubernetes.io/part-of': 'recon8s', [APPLYSET_PARENT_TYPE_LABEL]: 'true' },
    },
    spec: {
      group: kind.group,
      names: {
        kind: kind.kind,
        listKind: `${kind.kind}List`,
        plural: kind.plural,
        singular: kind.singular,
        shortNames: [...kind.shortNames],
        categories: [...kind.categories],
      },
      scope: 'Namespaced',
      versions: [
        {
          name: kind.version,
          served: true,
          storage: true,
          schema: { openAPIV3Schema: root },
          subresources: {
            status: {},
            ...(kind.scale ? { scale: { ...kind.scale } } : {}),
          },
          additionalPrinterColumns: kind.printerColumns.map((c) => ({ ...c })),
        },
      ],
    },
  };
}
