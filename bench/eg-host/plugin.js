'use strict';
/**
 * The reference Express Gateway plugin of the benchmark (same host, same version as the product):
 * - `bench-direct` answers the user itself: the host's ceiling (d);
 * - `bench-rpc` does one amqplib RPC and passes the reply's bytes on: the floor any plugin starts from (c).
 * Both are as small as a correct policy can be, so the distance to them is what the product's pipeline costs.
 */
const { benchUser } = require('../lib/user');
const { rpcClient } = require('../lib/rpc-client');

const JSON_TYPE = 'application/json; charset=utf-8';
let client;

module.exports = {
  version: '1.2.0',
  policies: ['bench-direct', 'bench-rpc'],
  init(ctx) {
    ctx.registerPolicy({
      name: 'bench-direct',
      schema: { $id: 'http://express-gateway.io/schemas/policies/bench-direct.json', type: 'object' },
      policy: () => (req, res) => {
        res.setHeader('Content-Type', JSON_TYPE);
        res.end(JSON.stringify(benchUser(req.params.userId)));
      },
    });
    ctx.registerPolicy({
      name: 'bench-rpc',
      schema: { $id: 'http://express-gateway.io/schemas/policies/bench-rpc.json', type: 'object' },
      policy: () => {
        client ??= rpcClient(process.env.BENCH_AMQP_URL, process.env.BENCH_QUEUE);
        return (req, res) => {
          client
            .then((c) => c.call({ userId: req.params.userId }))
            .then((body) => {
              res.setHeader('Content-Type', JSON_TYPE);
              res.end(body);
            })
            .catch(() => {
              res.statusCode = 502;
              res.end();
            });
        };
      },
    });
  },
};
