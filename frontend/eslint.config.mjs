// ESLint for the site's own JavaScript (static/, no build step): ES modules in the browser, plus
// the classic scripts (theme.js) and the Node scripts of this folder. `npm ci --prefix frontend`
// installs it; `.ci/run` runs it: `npx --prefix frontend eslint -c frontend/eslint.config.mjs static frontend`.

import js from "@eslint/js";
import globals from "globals";

export default [
  { ignores: ["static/vendor/**", "frontend/node_modules/**", "static/api/**"] },
  js.configs.recommended,
  {
    files: ["static/**/*.js"],
    languageOptions: {
      ecmaVersion: 2023,
      sourceType: "module",
      globals: { ...globals.browser, Chart: "readonly" },
    },
    rules: {
      "no-alert": "error", // the few confirm() calls are each marked and said why
      "no-console": "error",
      eqeqeq: ["error", "always"],
      "no-var": "error",
      "prefer-const": "error",
      "no-unused-vars": ["error", { args: "after-used", argsIgnorePattern: "^_" }],
      "no-shadow": "error",
      "no-param-reassign": ["error", { props: false }],
      "no-use-before-define": ["error", { functions: false, classes: false, variables: true }],
      "object-shorthand": "error",
      "prefer-template": "error",
      curly: ["error", "multi-line"],
    },
  },
  {
    // classic scripts: loaded with <script src>, not as modules
    files: ["static/builder/js/theme.js"],
    languageOptions: { sourceType: "script" },
  },
  {
    files: ["frontend/**/*.mjs"],
    languageOptions: { ecmaVersion: 2023, sourceType: "module", globals: { ...globals.node } },
  },
];
