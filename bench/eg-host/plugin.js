'use strict';
/**
 * The reference Express Gateway plugin of the benchmark (same host, same version as the product):
 * - `bench-direct` answers the user itself: the host's ceiling (d);
 * - `bench-rpc` does one amqplib RPC and passes the reply's bytes on: the floor any plugin starts from (c).
 * - `bench-rpc-protocol` does the same RPC with the message the product sends (docs/bus-protocol.md: `{input}` body,
 *   ids and user as headers, expiration, mandatory, a deadline timer) and unwraps the reply's envelope, re-serialising
 *   the result: the protocol floor (p), so that (p)/(c) is what the protocol costs and (b)/(p) what the policies do.
 * They are as small as a correct policy can be, so the distance to them is what the product's pipeline costs.
 */
const { benchUser } = require('../lib/user');
const { rpcClient } = require('../lib/rpc-client');

const JSON_TYPE = 'application/json; charset=utf-8';
let client;

module.exports = {
  version: '1.2.0',
  policies: ['bench-direct', 'bench-rpc', 'bench-rpc-protocol'],
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
    ctx.registerPolicy({
      name: 'bench-rpc-protocol',
      schema: { $id: 'http://express-gateway.io/schemas/policies/bench-rpc-protocol.json', type: 'object' },
      policy: () => {
        client ??= rpcClient(process.env.BENCH_AMQP_URL, process.env.BENCH_QUEUE);
        // What the product's token cache hands the bus: the user, serialised once.
        const user = JSON.stringify({
          userId: 'bench-user',
          email: 'bench@example.com',
          name: 'Bench',
          permissions: ['users:read'],
        });
        let n = 0;
        return (req, res) => {
          n += 1;
          const headers = { correlationId: `bench-${n}`, requestId: `bench-${n}-r`, user };
          client
            .then((c) => c.callProtocol('GetUserQuery', { userId: req.params.userId }, headers, 30000))
            .then((reply) => {
              if (reply?.ok !== true) throw new Error('not ok');
              res.setHeader('Content-Type', JSON_TYPE);
              res.end(JSON.stringify(reply.result));
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
