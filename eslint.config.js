// eslint for our own scripts in static/js (make lint). They are plain browser scripts
// (IIFEs, no modules, no build step); the vendored libraries in static/vendor are not ours.
const js = require("@eslint/js");
const globals = require("globals");

module.exports = [
  { ignores: ["static/vendor/**", "staticfiles/**", "node_modules/**"] },
  js.configs.recommended,
  {
    files: ["static/js/**/*.js"],
    languageOptions: {
      ecmaVersion: 2022,
      sourceType: "script",
      globals: { ...globals.browser, htmx: "readonly", Chart: "readonly" },
    },
    linterOptions: { reportUnusedDisableDirectives: "error" },
    rules: {
      eqeqeq: ["error", "always", { null: "ignore" }],
    },
  },
  {
    files: ["eslint.config.js"],
    languageOptions: { sourceType: "commonjs", globals: globals.node },
  },
];
