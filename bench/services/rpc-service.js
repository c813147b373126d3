'use strict';
/** The minimal amqplib service behind the floor (c) and the bus-limit client (f). Env: BENCH_AMQP_URL, BENCH_QUEUE. */
const { rpcService } = require('../lib/rpc-client');

rpcService(process.env.BENCH_AMQP_URL, process.env.BENCH_QUEUE)
  .then((svc) => {
    console.log('[rpc-service] ready');
    const stop = () => svc.close().then(() => process.exit(0));
    process.once('SIGTERM', stop);
    process.once('SIGINT', stop);
  })
  .catch((err) => {
    console.error(`[rpc-service] start failed: ${err?.message}`);
    process.exit(1);
  });
