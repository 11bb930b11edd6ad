import js from '@eslint/js';
import tseslint from 'typescript-eslint';

export default tseslint.config(
  { ignores: ['**/dist/**', 'node_modules/**', 'coverage/**', '**/*.d.ts'] },
  js.configs.recommended,
  ...tseslint.configs.recommended,
  {
    rules: {
      '@typescript-eslint/no-explicit-any': 'error',
      '@typescript-eslint/no-unused-vars': ['error', { argsIgnorePattern: '^_', varsIgnorePattern: '^_' }],
      'no-constant-condition': ['error', { checkLoops: false }],
    },
  },
  {
    // tests of how text from outside is shown look for control characters on purpose
    files: ['**/test/**/*.ts'],
    rules: { 'no-control-regex': 'off' },
  },
  {
    // Every line of the packages' sources is at most 120 characters: code, strings, template literals, regular
    // expressions, comments and URLs alike (prettier wraps code at 120 but leaves strings and comments as they are).
    // max-len is deprecated in ESLint core (kept until ESLint 11; @stylistic/max-len carries it on).
    files: ['packages/*/src/**/*.{ts,mts,cts,js,mjs,cjs}'],
    rules: {
      'max-len': [
        'error',
        {
          code: 120,
          tabWidth: 1,
          ignoreComments: false,
          ignoreTrailingComments: false,
          ignoreUrls: false,
          ignoreStrings: false,
          ignoreTemplateLiterals: false,
          ignoreRegExpLiterals: false,
        },
      ],
    },
  },
  {
    // No function of the library is longer than 80 lines (blank lines and comments included; a nested function
    // counts towards its outer one too): what does not fit on a screen is split into functions with one job each.
    files: ['packages/core/src/**/*.ts'],
    rules: { 'max-lines-per-function': ['error', { max: 80 }] },
  },
  {
    files: ['**/*.js', '**/*.mjs'],
    languageOptions: { globals: { process: 'readonly', console: 'readonly', Buffer: 'readonly', setTimeout: 'readonly' } },
  },
);
