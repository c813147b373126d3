'use strict';
/**
 * The AMQP transporter settings that make moleculer a fair peer: Nagle off (as on our sockets), prefetch 16
 * (the SDK's; moleculer's default of 1 serialises the service), and queues that expire soon after the run.
 */
function transporter() {
  return {
    type: 'AMQP',
    options: {
      url: process.env.BENCH_AMQP_URL,
      prefetch: 16,
      socketOptions: { noDelay: true },
      autoDeleteQueues: 30000,
    },
  };
}

module.exports = { transporter };
