/**
 * `npm test`: every test in dist/test. Files named on the command line (`npx mocha dist/test/x.test.js`) run alone:
 * a spec in the config would be added to them, running the whole suite instead.
 */
const named = process.argv.slice(2).some((arg) => /\.test\.js$/.test(arg));

module.exports = {
  spec: named ? [] : ['dist/test/**/*.test.js'],
  timeout: 20000,
  reporter: 'spec',
};
