// Lint rules (npm run lint): eslint's and typescript-eslint's recommended sets.
import js from '@eslint/js';
import globals from 'globals';
import tseslint from 'typescript-eslint';

// outside src/vfs/, only the vfs's face may be imported
const vfsFace = {
  group: ['**/vfs/**', '!**/vfs/vfs.js', '!**/vfs/errors.js'],
  message: "only the vfs's face (vfs/vfs.ts, vfs/errors.ts) is seen from outside src/vfs/",
};

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
  // The layers (docs/architecture.md): the vfs reaches the network only through the client's
  // interface; the CLI and the FUSE adapter see only the vfs's face; the local server is a
  // program of its own that only `seafs serve` and the demo start. (Dynamic import() is not
  // checked by this rule.)
  {
    files: ['src/vfs/**/*.ts'],
    rules: {
      'no-restricted-imports': [
        'error',
        {
          patterns: [
            {
              group: [
                '**/client/**',
                '!**/client/types.js',
                '!**/client/errors.js',
                '**/cli/**',
                '**/fuse/**',
                '**/server/**',
              ],
              message: 'the vfs imports only client/types and client/errors from outside src/vfs/',
            },
          ],
        },
      ],
    },
  },
  {
    files: ['src/client/**/*.ts'],
    rules: {
      'no-restricted-imports': [
        'error',
        {
          patterns: [
            { group: ['**/vfs/**', '**/fuse/**', '**/cli/**', '**/server/**'], message: 'the client stands alone' },
          ],
        },
      ],
    },
  },
  {
    files: ['src/cli/**/*.ts', 'src/fuse/**/*.ts'],
    ignores: ['src/cli/serve.ts', 'src/cli/mount/demo.ts'],
    rules: {
      'no-restricted-imports': [
        'error',
        {
          patterns: [
            vfsFace,
            { group: ['**/server/**'], message: 'only cli/serve.ts and the demo start the local server' },
          ],
        },
      ],
    },
  },
  {
    files: ['src/cli/serve.ts', 'src/cli/mount/demo.ts'],
    rules: {
      'no-restricted-imports': [
        'error',
        {
          patterns: [vfsFace],
        },
      ],
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
