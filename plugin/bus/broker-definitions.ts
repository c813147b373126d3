import { createHash, randomBytes } from 'node:crypto';
import { WORK_QUEUE_EXPIRES_MS } from './amqp/wire';

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
  /** The caps on what the broker holds for the bus (brokerCaps): DEFAULT_CAPS when absent, none when false. */
  caps?: CapsInput | false;
}

/** How many processes the caps make room for. */
export interface CapsInput {
  /** Instances of one service running at once (they share its broker user). */
  instances: number;
  /** Gateway instances running at once (they share the gateway user). */
  gateways: number;
}

export const DEFAULT_CAPS: CapsInput = { instances: 32, gateways: 8 };

type Limits = Record<string, number>;

/**
 * A runtime parameter. RabbitMQ 3.10 imports no `operator_policies` section (it skips it without a word) but takes an
 * operator policy as the runtime parameter it is stored as (component operator_policy), validated the same way.
 */
type Parameter =
  | {
      vhost: string;
      component: 'operator_policy';
      name: string;
      value: { pattern: string; 'apply-to': 'queues'; priority: number; definition: Limits };
    }
  | { vhost: string; component: 'vhost-limits'; name: 'limits'; value: Limits };

export interface BrokerDefinitions {
  users: Array<{ name: string; password_hash: string; hashing_algorithm: string; tags: string[]; limits?: Limits }>;
  vhosts: Array<{ name: string }>;
  permissions: Array<{ user: string; vhost: string; configure: string; write: string; read: string }>;
  topic_permissions: Array<{ user: string; vhost: string; exchange: string; write: string; read: string }>;
  /** The caps (brokerCaps): operator policies and vhost limits; absent when the definitions are made without them. */
  parameters?: Parameter[];
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
  if (input.caps !== false) brokerCaps(definitions, input, input.caps ?? DEFAULT_CAPS);
  return definitions;
}

const MiB = 1024 * 1024;
/**
 * Every queue a service user may declare: its work queue (P.svc.S) and its server-named ones (amq.gen-…, where
 * discovery requests reach each instance; P.discover.<uuid> too under legacyReplies). The gateway's own queues
 * (P.announce.*, P.reply.*) are bounded by their own arguments and matched by neither pattern.
 */
const WORK_QUEUE_CAPS: Limits = {
  // The backlog of one service: requests are small (a 1 MiB body at most by default), and 10,000 waiting ones
  // already mean minutes of delay; the bytes are those of a gateway's reply queue.
  'max-length': 10_000,
  'max-length-bytes': 64 * MiB,
  // What a service declares (legacy topology only): a queue left without consumers goes within 15 s, whatever its
  // declaration says. The definitions' own work queues get no expiry (brokerCaps).
  expires: WORK_QUEUE_EXPIRES_MS,
};
const SERVER_NAMED_QUEUE_CAPS: Limits = {
  // A discovery queue carries `discover` requests ({} each), rare and consumed at once.
  'max-length': 100,
  'max-length-bytes': MiB,
  expires: WORK_QUEUE_EXPIRES_MS,
  'message-ttl': 60_000,
};
/**
 * Channels one connection may open: a service's and the gateway's held 5 (test/e2e/broker-caps), some short-lived
 * (exchange check, topology keeper, queue probe); the gateway adds one reply consumer per service. Room above that.
 */
const CHANNELS_PER_CONNECTION = 16;
/** A dropped connection may outlive its replacement until the broker notices (heartbeat): count each process twice. */
const RECONNECT_OVERLAP = 2;

/**
 * The broker side of the caps, added to `definitions` (docs/operations.md, "Caps on the broker side"): operator
 * policies bound every queue a service user may declare (length, bytes, expiry: the lower of them and the queue's
 * own arguments wins, so a declaration cannot lift them), per-user connection and channel limits, and vhost limits
 * on connections and queues. RabbitMQ 3.10 takes no `overflow` in an operator policy: a full queue drops its oldest
 * message (unless declared reject-publish), either way it holds no more.
 */
function brokerCaps(definitions: BrokerDefinitions, input: DefinitionsInput, caps: CapsInput): void {
  const { prefix } = input;
  const vhost = input.vhost ?? '/';
  for (const [key, value] of Object.entries(caps))
    if (!Number.isInteger(value) || value < 1) throw new Error(`caps: ${key} must be a whole number from 1`);
  const services = Object.keys(input.services).length;
  const serverNamed = `amq\\.gen-.*${input.legacyReplies ? `|${literal(`${prefix}.discover.`)}.*` : ''}`;
  const policy = (name: string, pattern: string, definition: Limits): Parameter => ({
    vhost,
    component: 'operator_policy',
    name: `${prefix}-${name}`,
    value: { pattern, 'apply-to': 'queues', priority: 0, definition },
  });
  const serviceConnections = RECONNECT_OVERLAP * caps.instances;
  const gatewayConnections = RECONNECT_OVERLAP * caps.gateways;
  for (const user of definitions.users) {
    const connections = user.name === input.gatewayUser ? gatewayConnections : serviceConnections;
    const perConnection = CHANNELS_PER_CONNECTION + (user.name === input.gatewayUser ? services : 0);
    user.limits = { 'max-connections': connections, 'max-channels': connections * perConnection };
  }
  // Queues: per gateway connection a reply queue per service, an intake queue per service and a shared one; per
  // service instance its discovery queue, per service its work queue.
  const queues = gatewayConnections * (2 * services + 1) + services * (serviceConnections + 1);
  // Work queues the definitions declare must outlive their consumers: the service may not declare them again.
  const legacy = input.legacyTopology === true || input.legacyReplies === true;
  const { expires: _serviceDeclared, ...definedWorkQueueCaps } = WORK_QUEUE_CAPS;
  definitions.parameters = [
    policy('work-queue-caps', `^${literal(`${prefix}.svc.`)}`, legacy ? WORK_QUEUE_CAPS : definedWorkQueueCaps),
    policy('server-named-queue-caps', `^(${serverNamed})$`, SERVER_NAMED_QUEUE_CAPS),
    {
      vhost,
      component: 'vhost-limits',
      name: 'limits',
      value: { 'max-connections': gatewayConnections + services * serviceConnections, 'max-queues': queues },
    },
  ];
}
