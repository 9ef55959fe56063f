// Status fields both kinds report, shaped per the Kubernetes API conventions.
import * as s from '../schema/schema.js';

export const observedGeneration = s.optional(
  s.integer({ description: 'The metadata.generation this status describes.', minimum: 0 }),
);

export const condition = s.object({
  typeName: 'Condition',
  description: 'One aspect of the current state (metav1.Condition).',
  properties: {
    type: s.required(s.string({ description: 'Ready, Progressing or Degraded.', maxLength: 316 })),
    status: s.required(s.string({ description: 'True, False or Unknown.', enum: ['True', 'False', 'Unknown'] })),
    observedGeneration: s.optional(
      s.integer({ description: 'The metadata.generation this condition was set from.', minimum: 0 }),
    ),
    lastTransitionTime: s.required(s.string({ description: 'When status last changed (RFC 3339).' })),
    reason: s.required(s.string({ description: 'A CamelCase reason for the last transition.', maxLength: 1024 })),
    message: s.required(s.string({ description: 'A human-readable explanation.', maxLength: 32768 })),
  },
});

export const conditions = s.optional(
  s.array({
    description: 'Conditions Ready, Progressing and Degraded.',
    items: condition,
    maxItems: 16,
    listType: 'map',
    listMapKeys: ['type'],
  }),
);
