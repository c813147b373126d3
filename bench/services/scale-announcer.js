'use strict';
/**
 * Discovery at scale: announces synthetic CRUD contracts (Create/Get/Update/List per resource `Asset<n>`, so
 * 4 routes per resource), over the plugin's own SDK and AMQP transport. Driven by bench/run.mjs over IPC:
 *   { set: n }          announce exactly n synthetic contracts (replacing what this process announced before), in
 *                       services of PER_SERVICE contracts, so that each announcement stays under the gateway's
 *                       announcementMaxBytes (256 KB by default; 1,000 contracts in one are about 330 KB)
 *   { latecomer: true } announce one new contract (GetLatecomerQuery) from another service; replies with the
 *                       time the announcement left, so run.mjs can time it to the first 2xx
 * Env: BUS_URL, BUS_PREFIX. Resources are named Asset…, so their paths sort before /api/users: the route the
 * benchmark reads is matched after every synthetic one (the host tries routes in order).
 */
const path = require('node:path');

const ROOT = path.resolve(__dirname, '..', '..');
const { serve, createTransport } = require(path.join(ROOT, 'dist', 'sdk'));

const schemaFor = (idField) => ({
  input: { type: 'object', properties: { [idField]: { type: 'string', minLength: 1 }, name: { type: 'string' } } },
  output: { type: 'object', properties: { [idField]: { type: 'string' }, name: { type: 'string' } } },
});

const PER_SERVICE = 200;

function syntheticOperations(count) {
  const ops = [];
  for (let i = 0; ops.length < count; i++) {
    const resource = `Asset${String(i).padStart(4, '0')}`;
    const idField = `asset${String(i).padStart(4, '0')}Id`;
    const { input, output } = schemaFor(idField);
    const contract = (messageType) => ({
      messageType,
      inputSchema: input,
      outputSchema: output,
      requiredPermissions: ['users:read'],
    });
    for (const messageType of [
      `Get${resource}Query`,
      `List${resource}sQuery`,
      `Create${resource}Command`,
      `Update${resource}Command`,
    ]) {
      if (ops.length < count)
        ops.push({ contract: contract(messageType), handle: (inputValue) => ({ ...inputValue }) });
    }
  }
  return ops;
}

async function main() {
  const transport = createTransport({ url: process.env.BUS_URL, prefix: process.env.BUS_PREFIX });
  await transport.start();
  let current = [];
  let latecomer;
  process.on('message', async (msg) => {
    try {
      if (msg.set !== undefined) {
        await Promise.all(current.map((service) => service.stop()));
        const ops = syntheticOperations(msg.set);
        current = [];
        for (let i = 0; i * PER_SERVICE < ops.length; i++) {
          current.push(
            await serve({
              transport,
              service: `scale-service-${i}`,
              operations: ops.slice(i * PER_SERVICE, (i + 1) * PER_SERVICE),
              ttlMs: 600000,
            }),
          );
        }
        process.send({ done: 'set', count: msg.set });
      } else if (msg.latecomer) {
        const sentAt = Date.now();
        latecomer = await serve({
          transport,
          service: 'latecomer-service',
          ttlMs: 600000,
          operations: [
            {
              contract: {
                messageType: 'GetLatecomerQuery',
                requiredPermissions: ['users:read'],
                inputSchema: {
                  type: 'object',
                  properties: { latecomerId: { type: 'string' } },
                  required: ['latecomerId'],
                },
                outputSchema: { type: 'object' },
              },
              handle: (input) => ({ latecomerId: input.latecomerId }),
            },
          ],
        });
        process.send({ done: 'latecomer', sentAt });
      }
    } catch (err) {
      process.send({ error: String(err?.message) });
    }
  });
  const stop = async () => {
    await latecomer?.stop().catch(() => undefined);
    await Promise.all(current.map((service) => service.stop().catch(() => undefined)));
    await transport.close().catch(() => undefined);
    process.exit(0);
  };
  process.once('SIGTERM', stop);
  process.once('SIGINT', stop);
  process.once('disconnect', stop);
  process.send({ ready: true });
}

main().catch((err) => {
  console.error(`[scale-announcer] failed: ${err?.message}`);
  process.exit(1);
});
