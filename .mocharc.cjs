/**
 * `npm test`: every test in dist/test. Files named on the command line (`npx mocha dist/test/x.test.js`) run alone:
 * a spec in the config would be added to them, running the whole suite instead.
 */
const named = process.argv.slice(2).some((arg) => /\.test\.js$/.test(arg));

module.exports = {
  spec: named ? [] : ['dist/test/**/*.test.js'],
  // The leak check kills what a test left running and fails the run naming it; --exit then ends the run at its
  // summary instead of waiting on what is left (open sockets are named by the check, not hidden).
  require: ['dist/test/support/leak-check.js'],
  exit: true,
  timeout: 20000,
  reporter: 'spec',
};
