'use strict';
/** (e) the moleculer service: users.get answers the bench user. Env: BENCH_AMQP_URL, BENCH_NAMESPACE. */
const { ServiceBroker } = require('moleculer');
const { benchUser } = require('../lib/user');
const { transporter } = require('./transporter');

const broker = new ServiceBroker({
  namespace: process.env.BENCH_NAMESPACE,
  nodeID: `users-${process.pid}`,
  transporter: transporter(),
  logger: false,
});
broker.createService({ name: 'users', actions: { get: { handler: (ctx) => benchUser(ctx.params.userId) } } });
broker.start().then(
  () => console.log('[moleculer-service] ready'),
  (err) => {
    console.error(`[moleculer-service] start failed: ${err?.message}`);
    process.exit(1);
  },
);
const stop = () => broker.stop().finally(() => process.exit(0));
process.once('SIGTERM', stop);
process.once('SIGINT', stop);
