/**
 * Which way imports may point (`npm run lint:deps`, part of `npm test`). Layers, bottom up: plugin/ (the core)
 * and sdk/ (what a service links) ▸ policies/ and conditions/ (the host's steps) ▸ plugin/manifest.ts, which
 * registers them with the host. Type-only imports count: a cycle of types still ties the files together.
 */

/** Where the shipped code starts: the host loads the manifest, a service the SDK, ops the three bins (plugin/cli/). */
const ENTRY_POINTS = [
  '^plugin/manifest\\.ts$',
  '^sdk/index\\.ts$',
  '^plugin/cli/contracts-broker-definitions\\.ts$',
  '^plugin/cli/contracts-check-config\\.ts$',
  '^plugin/cli/contracts-gateway\\.ts$',
];

module.exports = {
  forbidden: [
    {
      name: 'no-circular',
      comment: 'A file never reaches itself through its imports.',
      severity: 'error',
      from: {},
      to: { circular: true },
    },
    {
      name: 'core-not-to-policies',
      comment: 'The core and the SDK know no policy or condition; only the manifest registers them.',
      severity: 'error',
      from: { path: '^(plugin|sdk)/', pathNot: '^plugin/manifest\\.ts$' },
      to: { path: '^(policies|conditions)/' },
    },
    {
      name: 'core-not-to-runtime',
      comment: 'The core takes what it needs as arguments; only what init() registers is handed the runtime itself.',
      severity: 'error',
      from: { path: '^(plugin|sdk)/', pathNot: ['^plugin/(manifest|runtime)\\.ts$', '^plugin/operations/'] },
      to: { path: '^plugin/runtime\\.ts$' },
    },
    {
      name: 'host-only-through-adapter',
      comment:
        'Express Gateway and its internals (its logger, db, policies) are loaded in plugin/host/ alone, the host adapter; the rest reaches the host through it.',
      severity: 'error',
      from: { path: '^(plugin|policies|conditions|sdk)/', pathNot: '^plugin/host/' },
      to: { path: '(^|/)node_modules/express-gateway/' },
    },
    {
      name: 'host-context-only-in-adapter',
      comment:
        'What the host hands init() (its Config, event bus and servers: plugin/host/plugin-context.ts) is wrapped by the adapter (plugin/host/express-gateway.ts) into the port the rest is handed (plugin/host/port.ts); only plugin/host/ and the manifest, which makes the port, import either.',
      severity: 'error',
      from: { path: '^(plugin|policies|conditions|sdk)/', pathNot: ['^plugin/host/', '^plugin/manifest\\.ts$'] },
      to: { path: '^plugin/host/(plugin-context|express-gateway)\\.ts$' },
    },
    {
      name: 'sdk-only-service-side',
      comment: 'A service links the SDK: of plugin/ it uses the bus, the contract types, the error codes and tracing.',
      severity: 'error',
      from: { path: '^sdk/' },
      to: {
        path: '^plugin/',
        pathNot: [
          '^plugin/bus/',
          '^plugin/contracts/types\\.ts$',
          '^plugin/errors/(codes|describe)\\.ts$',
          '^plugin/observability/tracing\\.ts$',
        ],
      },
    },
    {
      name: 'sdk-not-to-gateway',
      comment: 'Nothing the SDK loads, however indirectly, starts the gateway or loads Express.',
      severity: 'error',
      from: { path: '^sdk/' },
      to: {
        path: [
          '^plugin/(runtime|manifest)\\.ts$',
          '^(policies|conditions)/',
          '(^|/)node_modules/(express|express-gateway)/',
        ],
        reachable: true,
      },
    },
    {
      name: 'shipped-not-to-tests',
      comment: 'What the package ships imports no test, script, example or benchmark.',
      severity: 'error',
      from: { path: '^(plugin|policies|conditions|sdk)/' },
      to: { path: '^(test|scripts|examples|bench)/' },
    },
    {
      name: 'shipped-not-to-dev-deps',
      comment: 'The package is installed without its devDependencies.',
      severity: 'error',
      from: { path: '^(plugin|policies|conditions|sdk)/' },
      to: { dependencyTypes: ['npm-dev'] },
    },
    {
      name: 'no-unreachable',
      comment: 'Every shipped file is reached from an entry point: a file only tests use is dead code.',
      severity: 'error',
      from: { path: ENTRY_POINTS },
      to: { path: '^(plugin|policies|conditions|sdk)/', pathNot: ENTRY_POINTS, reachable: false },
    },
    {
      name: 'no-orphans',
      comment:
        'A file that imports nothing and that nothing imports; the standalone scripts and test fixtures are run by path.',
      severity: 'error',
      from: {
        orphan: true,
        pathNot: ['\\.d\\.ts$', '^scripts/container/healthcheck\\.js$', '^scripts/ci/', '^test/harness/fixtures/'],
      },
      to: {},
    },
  ],
  options: {
    parser: 'swc',
    doNotFollow: { path: 'node_modules' },
    // sdk/dist: the SDK package's own build (npm pack --workspace sdk), compiled from the sources cruised here.
    exclude: { path: '^sdk/(dist|node_modules)/' },
    tsConfig: { fileName: 'tsconfig.json' },
    enhancedResolveOptions: { extensions: ['.ts', '.js', '.json'] },
  },
};
