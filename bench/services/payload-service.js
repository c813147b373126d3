'use strict';
/**
 * The service behind (b-list), (b-create) and the reply-size sweep, over the plugin's own SDK and AMQP transport,
 * answering from memory so that no database is measured (as (b)'s reads, answered from memory once read):
 * - CreateUserCommand and ListUsersQuery with the reference users service's own contracts (same routes, schemas,
 *   permissions): POST /api/users with an Idempotency-Key (the SDK's MemoryIdempotencyStore records each answer),
 *   GET /api/users?pageSize=100 (a page of 100 listed users, made once);
 * - GetPayloadQuery, GET /api/payloads/:payloadId: `{ payloadId, users }` of at least payloadId bytes
 *   (bench/lib/user.js payload(), the bytes (c)'s service answers `pad-<bytes>` with).
 * Env: BUS_URL, BUS_PREFIX, BENCH_ROOT (the checkout whose dist/ runs).
 */
const path = require('node:path');

const ROOT = path.resolve(process.env.BENCH_ROOT ?? path.join(__dirname, '..', '..'));
const { serve, createTransport, MemoryIdempotencyStore, answer } = require(path.join(ROOT, 'dist', 'sdk'));
const { createUser, listUsers } = require(path.join(ROOT, 'dist', 'examples', 'users-service', 'contracts'));
const { listedUser, payload } = require('../lib/user');

const PAGE = Array.from({ length: 100 }, (_, i) => listedUser(i));
const userSchema = listUsers.outputSchema.properties.users.items;
const getPayload = {
  messageType: 'GetPayloadQuery',
  requiredPermissions: ['users:read'],
  inputSchema: {
    type: 'object',
    properties: { payloadId: { type: 'string', pattern: '^[0-9]{1,8}$' } },
    required: ['payloadId'],
  },
  outputSchema: {
    type: 'object',
    properties: { payloadId: { type: 'string' }, users: { type: 'array', items: userSchema } },
    required: ['payloadId', 'users'],
  },
};

let created = 0;

async function main() {
  const transport = createTransport({ url: process.env.BUS_URL, prefix: process.env.BUS_PREFIX });
  await transport.start();
  const running = await serve({
    transport,
    service: 'bench-payload-service',
    // At most 10,000 keys: the default 100,000 answers outgrow the 128 MB heap every bench process runs with.
    idempotency: { store: new MemoryIdempotencyStore(Date.now, 10_000) },
    operations: [
      {
        contract: createUser,
        handle: (input) => {
          created += 1;
          const user = {
            ...listedUser(created),
            email: input.email,
            firstName: input.firstName,
            lastName: input.lastName,
            name: `${input.firstName} ${input.lastName}`,
          };
          return answer({ ...user, success: true }, { status: 201, location: `/api/users/${user.userId}` });
        },
      },
      {
        contract: listUsers,
        handle: (input) => ({
          users: PAGE.slice(0, input.pageSize ?? 20),
          page: 1,
          pageSize: input.pageSize ?? 20,
          totalCount: PAGE.length,
          totalPages: 1,
          hasNext: false,
          hasPrevious: false,
        }),
      },
      { contract: getPayload, handle: (input) => payload(Number(input.payloadId)) },
    ],
  });
  console.log('[payload-service] ready');
  const stop = async () => {
    await running.stop().catch(() => undefined);
    await transport.close().catch(() => undefined);
    process.exit(0);
  };
  process.once('SIGTERM', stop);
  process.once('SIGINT', stop);
}

main().catch((err) => {
  console.error(`[payload-service] start failed: ${err?.message}`);
  process.exit(1);
});
