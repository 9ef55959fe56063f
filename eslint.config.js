// @ts-check
import js from '@eslint/js';
import tseslint from 'typescript-eslint';

export default tseslint.config(
  { ignores: ['node_modules/', 'build/', 'dist/', 'imports/', '**/*.d.ts', 'coverage/', '**/*.generated.ts'] },
  js.configs.recommended,
  ...tseslint.configs.strict,
  {
    rules: {
      '@typescript-eslint/no-explicit-any': 'error',
      '@typescript-eslint/no-unused-vars': ['error', { argsIgnorePattern: '^_', varsIgnorePattern: '^_' }],
      '@typescript-eslint/consistent-type-imports': 'error',
      'no-console': 'off',
      eqeqeq: ['error', 'always', { null: 'ignore' }],
    },
  },
  {
    // Constructs are pure and stand alone: no I/O, no clock, no randomness, no environment, no lib/.
    files: ['constructs/**/*.ts'],
    rules: {
      'no-restricted-imports': [
        'error',
        {
          patterns: [
            { group: ['**/lib/**', '../lib', '../../lib'], message: 'constructs/ never imports lib/.' },
            {
              group: ['node:*', 'fs', 'child_process', 'http', 'https', 'net', 'os', 'crypto'],
              message: 'constructs are pure: no I/O.',
            },
            { group: ['@kubernetes/client-node'], message: 'constructs never talk to a cluster.' },
          ],
        },
      ],
      'no-restricted-globals': [
        'error',
        { name: 'process', message: 'constructs are pure: no environment.' },
        { name: 'Date', message: 'constructs are pure: no clock.' },
        { name: 'fetch', message: 'constructs are pure: no network.' },
      ],
      'no-restricted-properties': [
        'error',
        { object: 'Math', property: 'random', message: 'constructs are deterministic.' },
      ],
    },
  },
  {
    // lib/ reaches the constructs only through their public entry point (render() and the spec types).
    files: ['lib/**/*.ts'],
    rules: {
      'no-restricted-imports': [
        'error',
        {
          patterns: [
            {
              regex: '^(\\.\\./)+constructs/(?!index\\.js$|mysql-member\\.js$).+',
              message:
                'lib/ reaches the constructs only through constructs/index.js (render()), and the agent through constructs/mysql-member.js.',
            },
            { group: ['cdk8s', 'cdk8s-plus-28'], message: 'lib/ never builds cdk8s objects except through render().' },
          ],
        },
      ],
    },
  },
);
