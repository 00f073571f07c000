// @ts-check
import eslint from '@eslint/js';
import tseslint from 'typescript-eslint';

export default tseslint.config(
  { ignores: ['node_modules/', 'out/', 'dist/', '*.vsix'] },
  eslint.configs.recommended,
  {
    files: ['**/*.ts'],
    extends: [...tseslint.configs.strictTypeChecked],
    languageOptions: {
      parserOptions: { projectService: true, tsconfigRootDir: import.meta.dirname },
    },
    rules: {
      '@typescript-eslint/restrict-template-expressions': ['error', { allowNumber: true }],
      '@typescript-eslint/no-confusing-void-expression': ['error', { ignoreArrowShorthand: true }],
      // `const { dropped: _, ...rest } = x` is how to copy an object without a key.
      '@typescript-eslint/no-unused-vars': ['error', { ignoreRestSiblings: true }],
      // node:test's describe/test return promises the runner itself awaits.
      '@typescript-eslint/no-floating-promises': [
        'error',
        { allowForKnownSafeCalls: [{ from: 'package', package: 'node:test', name: ['describe', 'test'] }] },
      ],
    },
  },
  {
    // The pure modules run under `node --test`, where there is no `vscode` module.
    files: ['src/core/**/*.ts', 'src/test/**/*.ts'],
    rules: {
      'no-restricted-imports': [
        'error',
        {
          paths: [
            { name: 'vscode', message: 'src/core and its tests must run without VS Code.' },
            { name: 'vscode-languageclient', message: 'src/core and its tests must run without VS Code.' },
            { name: 'vscode-languageclient/node', message: 'src/core and its tests must run without VS Code.' },
          ],
        },
      ],
    },
  },
  {
    // assert.* narrows as it goes, so the `?.` a test writes before its first
    // assertion looks needless to this rule after it.
    files: ['src/test/**/*.ts'],
    rules: { '@typescript-eslint/no-unnecessary-condition': 'off' },
  },
  {
    files: ['**/*.mjs'],
    languageOptions: { globals: { console: 'readonly', process: 'readonly' } },
  },
);
