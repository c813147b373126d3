import { createHash, randomBytes } from 'node:crypto';

/*
 * The broker side of "trust on the bus": RabbitMQ definitions (users, permissions, topic permissions, the two
 * exchanges) that give the gateway and every service a broker user of its own with least privilege, in the format
 * `rabbitmqctl import_definitions` and the broker's `load_definitions` accept. docs/operations.md explains them.
 */

export interface DefinitionsInput {
  /** The bus prefix P (BUS_PREFIX). */
  prefix: string;
  vhost?: string;
  /** The gateway's broker user. */
  gatewayUser: string;
  /** service name → its broker user (by default named like the service). */
  services: Readonly<Record<string, string>>;
  /** broker user → its password (hashed into the definitions; never written in clear). */
  passwords: Readonly<Record<string, string>>;
  /**
   * Also let every service user publish to the default exchange, as services from before the reply exchange reply
   * (a transition only: with it a service's credential can flood any queue, another service's work queue included).
   */
  legacyReplies?: boolean;
  /** Fixed salts for tests; random otherwise. */
  salt?: (user: string) => Buffer;
}

export interface BrokerDefinitions {
  users: Array<{ name: string; password_hash: string; hashing_algorithm: string; tags: string[] }>;
  vhosts: Array<{ name: string }>;
  permissions: Array<{ user: string; vhost: string; configure: string; write: string; read: string }>;
  topic_permissions: Array<{ user: string; vhost: string; exchange: string; write: string; read: string }>;
  exchanges: Array<{
    name: string;
    vhost: string;
    type: string;
    durable: boolean;
    auto_delete: boolean;
    internal: boolean;
    arguments: Record<string, never>;
  }>;
}

const HASHING = 'rabbit_password_hashing_sha256';
// What RabbitMQ accepts as a service name in our routing keys and queue names (and what stays readable in a regex).
const NAME = /^[A-Za-z0-9_.-]{1,200}$/;

/** A regex matching `text` literally. */
function literal(text: string): string {
  return text.replace(/[.*+?^${}()|[\]\\]/g, '\\$&');
}

/** RabbitMQ's rabbit_password_hashing_sha256: base64(salt ‖ sha256(salt ‖ password)), 4-byte salt. */
export function rabbitPasswordHash(password: string, salt: Buffer = randomBytes(4)): string {
  const digest = createHash('sha256')
    .update(Buffer.concat([salt, Buffer.from(password, 'utf8')]))
    .digest();
  return Buffer.concat([salt, digest]).toString('base64');
}

/**
 * Least privilege, resource by resource (P = prefix):
 * - the gateway declares `P.requests`, `P.discovery` and `P.replies`, publishes requests to `P.requests` (any
 *   service's key) and `discover` to `P.discovery`, consumes its own `P.announce.<uuid>` queues (topic: may bind
 *   `announce.*`) and its own exclusive reply queues `P.reply.<uuid>.<service>`, each bound to `P.replies` with its
 *   own name;
 * - service S declares and consumes its work queue `P.svc.S` only (no other user may read it), binds it to
 *   `P.requests` with key S only (a topic permission: RabbitMQ checks binding keys on topic exchanges, so no other
 *   user can bind a queue of its own for S's requests), hears `discover` on its own server-named `amq.gen-…` queue,
 *   publishes `announce.S` only (topic permission) and its replies to `P.replies` with keys `P.reply.<uuid>.S` only
 *   (topic permission: no reply into another service's reply queue); it can neither declare nor delete the
 *   exchanges, nor publish requests, nor use the default exchange (which reaches every queue, work queues included).
 */
export function brokerDefinitions(input: DefinitionsInput): BrokerDefinitions {
  const { prefix, gatewayUser } = input;
  const vhost = input.vhost ?? '/';
  for (const name of [prefix, gatewayUser, ...Object.keys(input.services), ...Object.values(input.services)]) {
    if (!NAME.test(name)) throw new Error(`${JSON.stringify(name)} is not a usable name (letters, digits, _ . - only)`);
  }
  const requests = `${prefix}.requests`;
  const discovery = `${prefix}.discovery`;
  const replies = `${prefix}.replies`;
  const any = (kind: string) => `${literal(`${prefix}.${kind}.`)}[A-Za-z0-9-]+`;
  // The gateway's reply queues, P.reply.<uuid>.<service>: their names are also their binding and routing keys. During
  // an upgrade (legacyReplies) a gateway of the previous version still declares its P.reply.<uuid> after a reconnect.
  const replyQueues = `${any('reply')}(\\.[A-Za-z0-9_.-]+)${input.legacyReplies ? '?' : ''}`;
  const users = [gatewayUser, ...Object.values(input.services)];
  if (new Set(users).size !== users.length)
    throw new Error('every service needs a broker user of its own, other than the gateway user');
  const missing = users.filter((u) => !input.passwords[u]);
  if (missing.length > 0) throw new Error(`no password for broker user(s) ${missing.join(', ')}`);

  const definitions: BrokerDefinitions = {
    users: users.map((name) => ({
      name,
      password_hash: rabbitPasswordHash(input.passwords[name] as string, input.salt?.(name)),
      hashing_algorithm: HASHING,
      tags: [],
    })),
    vhosts: [{ name: vhost }],
    permissions: [
      {
        user: gatewayUser,
        vhost,
        configure: `^(${literal(requests)}|${literal(discovery)}|${literal(replies)}|${any('announce')}|${replyQueues})$`,
        write: `^(${literal(requests)}|${literal(discovery)}|${any('announce')}|${replyQueues})$`,
        read: `^(${literal(discovery)}|${literal(replies)}|${any('announce')}|${replyQueues})$`,
      },
    ],
    topic_permissions: [
      { user: gatewayUser, vhost, exchange: requests, write: '.*', read: '^$' },
      { user: gatewayUser, vhost, exchange: discovery, write: '^discover$', read: '^announce\\.' },
      { user: gatewayUser, vhost, exchange: replies, write: '^$', read: `^${replyQueues}$` },
    ],
    exchanges: [
      { name: requests, vhost, type: 'topic', durable: true, auto_delete: false, internal: false, arguments: {} },
      { name: discovery, vhost, type: 'topic', durable: true, auto_delete: false, internal: false, arguments: {} },
      { name: replies, vhost, type: 'topic', durable: true, auto_delete: false, internal: false, arguments: {} },
    ],
  };
  // A service's discovery queue is server-named (amq.gen-…): RabbitMQ lets nobody declare an exchange or a
  // client-named queue under amq., so this pattern gives S no exchange of its own to route around topic permissions.
  // Services from before declared P.discover.<uuid>, which would also name such an exchange: allowed only during an
  // upgrade (legacyReplies).
  const discoverQueues = `amq\\.gen-[A-Za-z0-9_-]+${input.legacyReplies ? `|${any('discover')}` : ''}`;
  for (const [service, user] of Object.entries(input.services)) {
    const queue = `${prefix}.svc.${service}`;
    definitions.permissions.push({
      user,
      vhost,
      configure: `^(${literal(queue)}|${discoverQueues})$`,
      // No amq.default (unless legacyReplies): replies go to P.replies, where a topic permission binds their keys to S.
      write: `^(${literal(queue)}|${discoverQueues}|${literal(discovery)}|${literal(replies)}${input.legacyReplies ? '|amq\\.default' : ''})$`,
      read: `^(${literal(queue)}|${discoverQueues}|${literal(requests)}|${literal(discovery)})$`,
    });
    definitions.topic_permissions.push(
      // Binding keys on the request exchange: S's own name only; nothing may be published there.
      { user, vhost, exchange: requests, write: '^$', read: `^${literal(service)}$` },
      { user, vhost, exchange: discovery, write: `^announce\\.${literal(service)}$`, read: '^discover$' },
      // Replies: only to the gateway's reply queues for S; nothing may be bound.
      { user, vhost, exchange: replies, write: `^${any('reply')}\\.${literal(service)}$`, read: '^$' },
    );
  }
  return definitions;
}
