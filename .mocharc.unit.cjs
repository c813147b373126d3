/**
 * `npm run test:unit`: every test that needs no broker, Redis, PostgreSQL (server or embedded PGlite), browser or
 * spawned gateway. `npm test` (.mocharc.cjs) runs these and the rest. A new test file lands here unless listed
 * below; test/support/unit-only.ts fails a unit run that connects to one of the services.
 */
module.exports = {
  spec: ['dist/test/**/*.test.js'],
  ignore: [
    // Spawned gateways and services, a browser, real services.
    'dist/test/e2e/**',
    // RabbitMQ.
    'dist/test/bus/amqp.test.js',
    'dist/test/bus/broker-limits.test.js',
    'dist/test/bus/cluster-client.test.js',
    'dist/test/bus/work-queue.test.js',
    'dist/test/conformance/conformance.test.js',
    'dist/test/conformance/python-stop.test.js',
    // A spawned gateway.
    'dist/test/observability/logs.test.js',
    'dist/test/observability/metrics.test.js',
    'dist/test/observability/tracing.test.js',
    // A spawned gateway on RabbitMQ.
    'dist/test/observability/tracing-instrumented.test.js',
    'dist/test/packaging/settings-validation.test.js',
    // npm pack, a container image, a gateway installed with eg.
    'dist/test/packaging/container.test.js',
    'dist/test/packaging/install-plugin.test.js',
    'dist/test/packaging/sdk-package.test.js',
    // PostgreSQL and PGlite (and RabbitMQ for users-concurrency).
    'dist/test/sdk/idempotency-store.test.js',
    'dist/test/storage/answer-with-change.test.js',
    'dist/test/storage/database.test.js',
    'dist/test/storage/database-faults.test.js',
    'dist/test/storage/last-admin.test.js',
    'dist/test/storage/login-throttle.test.js',
    'dist/test/storage/user-name.test.js',
    'dist/test/storage/users-concurrency.test.js',
  ],
  require: ['dist/test/support/unit-only.js', 'dist/test/support/leak-check.js'],
  exit: true,
  timeout: 20000,
  reporter: 'dot',
};
