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
  /**
   * Also grant services what they needed before the per-service exchanges (an upgrade only): declare their work
   * queue, announce on the discovery exchange and reply on the shared reply exchange. Both are exchanges they read
   * or share, so with it one service's credential can again loop dead letters through the discovery exchange (a
   * flood that alarms the node) and reach other services' lanes. Implied by legacyReplies.
   */
  legacyTopology?: boolean;
  /** The type of the work queues the definitions declare (classic by default; quorum on a cluster). */
  queueType?: 'classic' | 'quorum';
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
  queues: Array<{
    name: string;
    vhost: string;
    durable: boolean;
    auto_delete: boolean;
    arguments: Record<string, string | number>;
  }>;
  bindings: Array<{
    source: string;
    vhost: string;
    destination: string;
    destination_type: 'queue' | 'exchange';
    routing_key: string;
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
 * Least privilege, resource by resource (P = prefix). The exchanges a service's user may bind from (read) and
 * those it may publish to (write) are disjoint, and it may configure no name that could become an exchange; so
 * whatever it publishes or dead-letters (RabbitMQ checks only write on a dead-letter exchange, with any key) reaches
 * the gateway's queues for that service and nothing else — no loop back into a queue of its own, no other lane:
 * - the gateway declares the exchanges, publishes requests to `P.requests` (any service's key) and `discover` to
 *   `P.discovery`, consumes its own `P.announce.<uuid>` queues (bound to `P.announcements.<S>`, the shared
 *   `P.announcements`, and `P.discovery` for services from before) and its own exclusive reply queues
 *   `P.reply.<uuid>.<S>`, each bound to `P.replies.<S>` (and `P.replies`) with its own name;
 * - service S consumes its work queue `P.svc.S` (declared here with fixed arguments; no other user may read it) and
 *   may bind it to `P.requests` with key S only (a topic permission: no other user can bind a queue for S's
 *   requests), hears `discover` on its own server-named `amq.gen-…` queue bound to `P.discovery`, which it may only
 *   read, and publishes to its own `P.announcements.S` (key `announce.S`) and `P.replies.S` (the keys of the
 *   gateway's reply queues for S), which nobody but the gateway may bind from; it can neither declare nor delete an
 *   exchange or its work queue, nor publish requests, nor use the default exchange (which reaches every queue).
 */
export function brokerDefinitions(input: DefinitionsInput): BrokerDefinitions {
  const { prefix, gatewayUser } = input;
  const vhost = input.vhost ?? '/';
  for (const name of [prefix, gatewayUser, ...Object.keys(input.services), ...Object.values(input.services)]) {
    if (!NAME.test(name)) throw new Error(`${JSON.stringify(name)} is not a usable name (letters, digits, _ . - only)`);
  }
  const legacy = input.legacyTopology === true || input.legacyReplies === true;
  const requests = `${prefix}.requests`;
  const discovery = `${prefix}.discovery`;
  const replies = `${prefix}.replies`;
  const announcements = `${prefix}.announcements`;
  const any = (kind: string) => `${literal(`${prefix}.${kind}.`)}[A-Za-z0-9-]+`;
  // The per-service exchanges P.announcements.<S> and P.replies.<S>.
  const perService = `${literal(`${prefix}.`)}(announcements|replies)\\.[A-Za-z0-9_.-]+`;
  // The gateway's reply queues, P.reply.<uuid>.<service>: their names are also their binding and routing keys. During
  // an upgrade (legacyReplies) a gateway of the previous version still declares its P.reply.<uuid> after a reconnect.
  const replyQueues = `${any('reply')}(\\.[A-Za-z0-9_.-]+)${input.legacyReplies ? '?' : ''}`;
  const users = [gatewayUser, ...Object.values(input.services)];
  if (new Set(users).size !== users.length)
    throw new Error('every service needs a broker user of its own, other than the gateway user');
  const missing = users.filter((u) => !input.passwords[u]);
  if (missing.length > 0) throw new Error(`no password for broker user(s) ${missing.join(', ')}`);

  const exchange = (name: string) => ({
    name,
    vhost,
    type: 'topic',
    durable: true,
    auto_delete: false,
    internal: false,
    arguments: {},
  });
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
        configure: `^(${literal(requests)}|${literal(discovery)}|${literal(replies)}|${literal(announcements)}|${perService}|${any('announce')}|${replyQueues})$`,
        write: `^(${literal(requests)}|${literal(discovery)}|${any('announce')}|${replyQueues})$`,
        read: `^(${literal(discovery)}|${literal(replies)}|${literal(announcements)}|${perService}|${any('announce')}|${replyQueues})$`,
      },
    ],
    topic_permissions: [
      { user: gatewayUser, vhost, exchange: requests, write: '.*', read: '^$' },
      { user: gatewayUser, vhost, exchange: discovery, write: '^discover$', read: '^announce\\.' },
      { user: gatewayUser, vhost, exchange: replies, write: '^$', read: `^${replyQueues}$` },
      { user: gatewayUser, vhost, exchange: announcements, write: '^$', read: '^announce\\.' },
    ],
    exchanges: [requests, discovery, replies, announcements].map(exchange),
    queues: [],
    bindings: [],
  };
  // A service's discovery queue is server-named (amq.gen-…): RabbitMQ lets nobody declare an exchange or a
  // client-named queue under amq., so this pattern gives S no exchange of its own to route around topic permissions.
  // Services from before declared P.discover.<uuid>, which would also name such an exchange: allowed only during an
  // upgrade (legacyReplies).
  const discoverQueues = `amq\\.gen-[A-Za-z0-9_-]+${input.legacyReplies ? `|${any('discover')}` : ''}`;
  const quorum = input.queueType === 'quorum';
  for (const [service, user] of Object.entries(input.services)) {
    const queue = `${prefix}.svc.${service}`;
    const ownAnnouncements = `${announcements}.${service}`;
    const ownReplies = `${replies}.${service}`;
    const replyKeys = `^${any('reply')}\\.${literal(service)}$`;
    const announceKey = `^announce\\.${literal(service)}$`;
    // Before the per-service exchanges (legacy): S declared its work queue and wrote to the shared exchanges.
    const oldWrites = legacy ? `|${literal(discovery)}|${literal(replies)}` : '';
    definitions.permissions.push({
      user,
      vhost,
      configure: `^(${legacy ? `${literal(queue)}|` : ''}${discoverQueues})$`,
      // No amq.default (unless legacyReplies): replies go to P.replies.S, which routes to the gateway's queues only.
      write: `^(${literal(queue)}|${discoverQueues}|${literal(ownAnnouncements)}|${literal(ownReplies)}${oldWrites}${input.legacyReplies ? '|amq\\.default' : ''})$`,
      read: `^(${literal(queue)}|${discoverQueues}|${literal(requests)}|${literal(discovery)})$`,
    });
    definitions.topic_permissions.push(
      // Binding keys on the request exchange: S's own name only; nothing may be published there.
      { user, vhost, exchange: requests, write: '^$', read: `^${literal(service)}$` },
      { user, vhost, exchange: discovery, write: legacy ? announceKey : '^$', read: '^discover$' },
      { user, vhost, exchange: ownAnnouncements, write: announceKey, read: '^$' },
      // Replies: only to the gateway's reply queues for S; nothing may be bound.
      { user, vhost, exchange: ownReplies, write: replyKeys, read: '^$' },
      { user: gatewayUser, vhost, exchange: ownAnnouncements, write: '^$', read: announceKey },
      { user: gatewayUser, vhost, exchange: ownReplies, write: '^$', read: replyKeys },
    );
    if (legacy) definitions.topic_permissions.push({ user, vhost, exchange: replies, write: replyKeys, read: '^$' });
    definitions.exchanges.push(exchange(ownAnnouncements), exchange(ownReplies));
    // S consumes its work queue as declared here: a user that could declare it could also declare an exchange of
    // that name and dead-letter into it in a loop. During an upgrade services from before declare it themselves.
    if (!legacy) {
      definitions.queues.push({
        name: queue,
        vhost,
        durable: true,
        auto_delete: false,
        arguments: quorum ? { 'x-queue-type': 'quorum', 'x-delivery-limit': 5 } : {},
      });
      definitions.bindings.push({
        source: requests,
        vhost,
        destination: queue,
        destination_type: 'queue',
        routing_key: service,
        arguments: {},
      });
    }
  }
  return definitions;
}
