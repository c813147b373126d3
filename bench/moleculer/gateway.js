'use strict';
/** (e) moleculer-web: GET /api/users/:userId → users.get over the AMQP transporter. Env: PORT, BENCH_AMQP_URL, BENCH_NAMESPACE. */
const { ServiceBroker } = require('moleculer');
const ApiGateway = require('moleculer-web');
const { transporter } = require('./transporter');

const broker = new ServiceBroker({
  namespace: process.env.BENCH_NAMESPACE,
  nodeID: `gateway-${process.pid}`,
  transporter: transporter(),
  logger: false,
});
broker.createService({
  name: 'api',
  mixins: [ApiGateway],
  settings: {
    port: Number(process.env.PORT),
    ip: '127.0.0.1',
    log4XXResponses: false,
    logRequest: null,
    logResponse: null,
    routes: [{ path: '/api', mappingPolicy: 'restrict', aliases: { 'GET users/:userId': 'users.get' } }],
  },
});
broker
  .start()
  .then(() => broker.waitForServices(['users'], 20000))
  .then(
    () => console.log('[moleculer-gateway] ready'),
    (err) => {
      console.error(`[moleculer-gateway] start failed: ${err?.message}`);
      process.exit(1);
    },
  );
const stop = () => broker.stop().finally(() => process.exit(0));
process.once('SIGTERM', stop);
process.once('SIGINT', stop);
