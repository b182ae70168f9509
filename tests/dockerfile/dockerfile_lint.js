// Lints Dockerfiles with dockerfile-utils (the engine of VS Code's Docker language server) through its library
// API, in one process, counting every diagnostic by severity. Run by tests/dockerfile/lint_test.cpp.
//   node dockerfile_lint.js NODE_MODULES_DIR FILE...
// Prints one JSON object: {"files": N, "errors": E, "warnings": W, "other": O, "problems": [...]}.
'use strict';
const fs = require('fs');
const path = require('path');

const utils = require(path.join(process.argv[2], 'dockerfile-utils'));
const files = process.argv.slice(3);

// Every configurable rule at WARNING (the 0.16.3 defaults, spelled out so a changed default cannot hide one).
const W = utils.ValidationSeverity.WARNING;
const settings = {
  deprecatedMaintainer: W,
  directiveCasing: W,
  emptyContinuationLine: W,
  instructionCasing: W,
  instructionCmdMultiple: W,
  instructionEntrypointMultiple: W,
  instructionHealthcheckMultiple: W,
  instructionJSONInSingleQuotes: W,
  instructionWorkdirRelative: W,
};

// LSP DiagnosticSeverity: 1 error, 2 warning, 3 information, 4 hint.
const result = { files: files.length, errors: 0, warnings: 0, other: 0, problems: [] };
for (const file of files) {
  const text = fs.readFileSync(file, 'utf8');
  for (const d of utils.validate(text, settings)) {
    if (d.severity === 1) result.errors++;
    else if (d.severity === 2) result.warnings++;
    else result.other++;
    result.problems.push({ file, line: d.range.start.line + 1, severity: d.severity, message: d.message });
  }
}
process.stdout.write(JSON.stringify(result) + '\n');
