import net from 'node:net';

/**
 * Loaded by .mocharc.unit.cjs (`npm run test:unit`): a unit test must not reach RabbitMQ, Redis or PostgreSQL. One
 * that does fails here, naming the service, instead of passing slowly where they run and failing where they do not;
 * its file belongs in the config's `ignore` list.
 */
const SERVICES = new Map([
  [5672, 'RabbitMQ'],
  [6379, 'Redis'],
  [5432, 'PostgreSQL'],
]);

type Connect = (this: net.Socket, ...args: unknown[]) => net.Socket;
const connect = net.Socket.prototype.connect as Connect;

function portOf(args: unknown[]): number {
  // net.connect() passes [options, callback] as one array argument; socket.connect() takes (options) or (port, host).
  const first = Array.isArray(args[0]) ? args[0][0] : args[0];
  const port = first !== null && typeof first === 'object' ? (first as { port?: unknown }).port : first;
  return Number(port);
}

net.Socket.prototype.connect = function (this: net.Socket, ...args: unknown[]): net.Socket {
  const service = SERVICES.get(portOf(args));
  if (service !== undefined)
    throw new Error(`a unit test connected to ${service}: list its file in .mocharc.unit.cjs ignore`);
  return connect.apply(this, args);
} as net.Socket['connect'];
