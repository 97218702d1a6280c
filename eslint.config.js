// Lint rules (npm run lint): eslint's and typescript-eslint's recommended sets.
import js from '@eslint/js';
import globals from 'globals';
import tseslint from 'typescript-eslint';

export default tseslint.config(
  { ignores: ['dist/', 'node_modules/', 'coverage/', 'bench-results/'] },
  js.configs.recommended,
  ...tseslint.configs.recommended,
  {
    // the benchmark's plain Node scripts
    files: ['**/*.mjs', '**/*.js'],
    languageOptions: {
      globals: globals.node,
    },
  },
  {
    rules: {
      // names starting with _ are deliberately unused (interface parameters, ignored tuple parts)
      '@typescript-eslint/no-unused-vars': [
        'error',
        { argsIgnorePattern: '^_', varsIgnorePattern: '^_', caughtErrors: 'none' },
      ],
      // the binding's and the tests' untyped corners
      '@typescript-eslint/no-explicit-any': 'warn',
    },
  },
);
