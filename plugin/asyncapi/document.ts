import type { Contract, JsonSchema } from '../contracts/types';
import { ERROR_CODES } from '../errors/codes';
import { contractsFingerprint } from '../openapi/document';
import { childSchemas, componentName, componentRef, embedSchema } from '../openapi/schema-embedding';
import { BusNames, DISCOVER_KEY, WORK_QUEUE_EXPIRES_MS } from '../bus/amqp/wire';
import { parseBrokerList } from '../bus/amqp/broker-list';

/** An AsyncAPI 3.0 document (docs/bus-protocol.md says it in prose; this says it for code generators). */
export type AsyncApiDocument = Record<string, unknown>;

/** AMQP bindings of this version (asyncapi/bindings amqp). */
const AMQP_BINDING = '0.3.0';

/** Channel, message and operation keys must match ^[A-Za-z0-9.\-_]+$ (AsyncAPI 3.0 "Components Object"). */
function key(name: string): string {
  return name.replace(/[^A-Za-z0-9._-]/g, '_');
}

const ref = ($ref: string) => ({ $ref });

/**
 * Where the document says the bus is: a server per node of BUS_URL (a cluster lists several) and the vhost the
 * bindings name. Built from the parsed address (host, port, protocol, vhost), never from the URL's text, so no user,
 * password or query parameter reaches the document.
 */
interface BusLocation {
  servers?: Record<string, unknown>;
  /** The vhost of every address; undefined for the embedded bus, which has none. */
  vhost?: string;
  /** A sentence for info.description. */
  note: string;
}

/**
 * The embedded bus lives inside the gateway's process: there is no broker to connect to, so the document lists no
 * server (an invented one would send a generator's client nowhere) and the bindings name no vhost; they still
 * describe the topology a broker carries when BUS_URL names one.
 */
function busLocation(busUrl: string): BusLocation {
  if (busUrl.trim() === 'embedded') {
    return {
      note:
        ' This gateway runs the embedded bus (BUS_URL=embedded): the bus is inside its process and only services in that ' +
        'process reach it, so the document lists no server; the AMQP bindings describe the topology a broker carries ' +
        'when BUS_URL names one.',
    };
  }
  const addresses = parseBrokerList(busUrl);
  const servers: Record<string, unknown> = {};
  addresses.forEach((a, i) => {
    const name = addresses.length === 1 ? 'broker' : `broker-${i + 1}`;
    servers[name] = {
      host: a.node,
      protocol: a.options.protocol,
      protocolVersion: '0-9-1',
      pathname: `/${encodeURIComponent(a.vhost)}`,
      title: addresses.length === 1 ? 'RabbitMQ' : `RabbitMQ node ${i + 1} of ${addresses.length}`,
      description:
        `The broker, virtual host "${a.vhost}" (the pathname, URL-encoded).` +
        (addresses.length > 1 ? ' One node of a cluster: a client may connect to any of them.' : ''),
    };
  });
  return { servers, vhost: addresses[0].vhost, note: '' };
}

/** The headers table every request carries (docs/bus-protocol.md "Requests"); all strings. */
const REQUEST_HEADERS: JsonSchema = {
  type: 'object',
  properties: {
    correlationId: { type: 'string', description: 'The trace id the caller sees as X-Correlation-Id.' },
    requestId: { type: 'string', description: "The gateway's id of this HTTP request (X-Request-Id)." },
    deadline: {
      type: 'string',
      pattern: '^[0-9]+$',
      description: 'When the gateway stops waiting, in ms since the Unix epoch.',
    },
    user: {
      type: 'string',
      description:
        'The authenticated caller as a JSON string (userId, email, name, permissions, roles); absent for anonymous calls.',
    },
    traceparent: {
      type: 'string',
      description:
        "W3C trace context: the span the service continues (the gateway's, or the caller's when it records none).",
    },
    tracestate: { type: 'string', description: 'W3C trace context: the vendor entries that go with traceparent.' },
    baggage: { type: 'string', description: "W3C baggage: the caller's key-value pairs, passed on." },
    idempotencyKey: { type: 'string', description: "The caller's Idempotency-Key (commands and POSTs)." },
    clientAddress: { type: 'string', description: "The caller's IP address as the gateway's host saw it." },
  },
  required: ['correlationId', 'requestId'],
};

/** A failed reply, whatever the message type. */
const REPLY_FAILURE: JsonSchema = {
  type: 'object',
  properties: {
    ok: { const: false },
    error: {
      type: 'object',
      properties: {
        code: { type: 'string', enum: Object.keys(ERROR_CODES) },
        message: { type: 'string' },
        status: { type: 'integer' },
        details: { type: 'object', additionalProperties: { type: 'string' } },
        retryAfter: { type: 'integer', minimum: 1, maximum: 86400 },
      },
      required: ['code'],
    },
  },
  required: ['ok', 'error'],
};

/** A contract as announced (docs/bus-protocol.md "Announcing contracts"). */
const CONTRACT: JsonSchema = {
  type: 'object',
  properties: {
    messageType: { type: 'string', pattern: '^[A-Za-z0-9][A-Za-z0-9._:-]{0,199}$' },
    targetService: { type: 'string', minLength: 1, maxLength: 200 },
    inputSchema: { type: 'object' },
    outputSchema: { type: 'object' },
    requiredPermissions: { type: 'array', items: { type: 'string' } },
    http: {
      type: 'object',
      properties: {
        method: { enum: ['GET', 'POST', 'PUT', 'DELETE', 'PATCH'] },
        paths: { type: 'array', items: { type: 'string', pattern: '^/' } },
      },
      required: ['method', 'paths'],
    },
    public: { type: 'boolean' },
    timeoutMs: { type: 'number', exclusiveMinimum: 0 },
    rateLimit: {
      type: 'object',
      properties: { max: { type: 'integer', minimum: 1 }, windowMs: { type: 'integer', minimum: 1000 } },
      required: ['max'],
    },
    deprecated: { type: 'boolean' },
    sunset: { type: 'string', description: 'ISO 8601 date or date-time: when the routes are expected to go.' },
  },
  required: ['messageType', 'targetService', 'inputSchema', 'outputSchema', 'requiredPermissions'],
};

const ANNOUNCEMENT: JsonSchema = {
  type: 'object',
  properties: {
    service: { type: 'string', minLength: 1, maxLength: 200 },
    instanceId: { type: 'string', minLength: 1, maxLength: 200 },
    ttlMs: {
      type: 'number',
      exclusiveMinimum: 0,
      maximum: 3600000,
      description: 'The lease: re-announce every ttlMs / 3.',
    },
    contracts: { type: 'array', items: ref(componentRef('Contract')) },
    withdrawn: {
      type: 'boolean',
      description: "true: ends this instance's lease at once (contracts and ttlMs are ignored).",
    },
    maintenance: {
      type: 'object',
      description:
        'This instance is in maintenance: while every live instance of the service says so, the gateway answers its routes 503 with Retry-After: retryAfterSeconds and sends it nothing. An announcement without it ends it.',
      properties: { retryAfterSeconds: { type: 'integer', minimum: 1, maximum: 86400 } },
      required: ['retryAfterSeconds'],
    },
  },
  required: ['service', 'instanceId'],
};

const SHARED_SCHEMAS = {
  RequestHeaders: REQUEST_HEADERS,
  ReplyFailure: REPLY_FAILURE,
  Contract: CONTRACT,
  Announcement: ANNOUNCEMENT,
  DiscoveryRequest: { type: 'object', description: 'Any JSON object: its content is not read.' },
};

/** What a keyword's sub-schema is called in a title: `X.Item` for `items`, `X.Value` for `additionalProperties`. */
const PART_NAMES: Record<string, string> = { items: 'Item', additionalItems: 'Item', additionalProperties: 'Value' };

/** Adds the title of every schema nested in `schema` (not its own) to `into`. */
function nestedTitles(schema: unknown, into: Set<string>): void {
  if (schema === null || typeof schema !== 'object' || Array.isArray(schema)) return;
  for (const { child } of childSchemas(schema as Record<string, unknown>)) {
    const title = (child as { title?: unknown } | null)?.title;
    if (typeof title === 'string') into.add(title);
    nestedTitles(child, into);
  }
}

/** A schema a generator makes a model (a class, an enum or a union) of, and names after its title. */
function becomesModel(schema: Record<string, unknown>): boolean {
  const t = schema.type;
  return (
    t === 'object' ||
    (Array.isArray(t) && t.length > 1) ||
    ['properties', 'enum', 'const', 'oneOf', 'anyOf', 'allOf'].some((k) => k in schema)
  );
}

/**
 * Gives a title to every schema of the component `name` that becomes a model, so code generators name their models
 * (`GetUserQuery.Output.user`, `ListUsersQuery.Output.users.Item`) instead of numbering anonymous ones. The
 * component itself is titled with its name, over a title of its own: two contracts may both say "User", and the
 * generators would give both models one name. A title a nested schema already has is kept. `used` holds the titles
 * taken (the components' names, the nested titles the contracts give): a title it holds gets a number (`X.a_2`).
 * Modifies `schema`, which must be the document's own copy.
 */
function addTitles(schema: unknown, title: string, used: Set<string>, root = false): void {
  if (schema === null || typeof schema !== 'object' || Array.isArray(schema)) return;
  const node = schema as Record<string, unknown>;
  if (root || (typeof node.title !== 'string' && becomesModel(node))) {
    let unique = title;
    for (let n = 2; !root && used.has(unique); n += 1) unique = `${title}_${n}`;
    used.add(unique);
    node.title = unique;
  }
  const base = typeof node.title === 'string' ? node.title : title;
  for (const { keyword, at, child } of childSchemas(node)) {
    const part = PART_NAMES[keyword] ?? keyword;
    const label = typeof at === 'string' ? at : at === undefined ? part : `${part}${at + 1}`;
    addTitles(child, `${base}.${label}`, used);
  }
}

/** A topic exchange as the gateway and the services declare it, in the vhost of BUS_URL (none for the embedded bus). */
function exchangeBinding(name: string, vhost: string | undefined) {
  return {
    amqp: {
      is: 'routingKey',
      exchange: { name, type: 'topic', durable: true, autoDelete: false, ...(vhost === undefined ? {} : { vhost }) },
      bindingVersion: AMQP_BINDING,
    },
  };
}

/**
 * The payload schemas of a message type's request and reply, each a component of its own (`X.Request`, `X.Reply`
 * and its success branch `X.ReplySuccess`) so that generators name their models after the message type.
 */
function messageSchemas(c: Contract): Record<string, JsonSchema> {
  const name = (part: 'Request' | 'ReplySuccess' | 'Reply') => componentName(c.messageType, part);
  return {
    [name('Request')]: {
      type: 'object',
      properties: { input: ref(componentRef(componentName(c.messageType, 'Input'))) },
      required: ['input'],
    },
    [name('ReplySuccess')]: {
      type: 'object',
      properties: {
        ok: { const: true },
        result: ref(componentRef(componentName(c.messageType, 'Output'))),
        status: { type: 'integer', minimum: 200, maximum: 299 },
        location: { type: 'string' },
      },
      required: ['ok'],
    },
    [name('Reply')]: { oneOf: [ref(componentRef(name('ReplySuccess'))), ref(componentRef('ReplyFailure'))] },
  };
}

function payloadRef(c: Contract, suffix: 'Request' | 'Reply') {
  return ref(componentRef(componentName(c.messageType, suffix)));
}

function requestMessage(c: Contract) {
  return {
    name: c.messageType,
    title: `${c.messageType} request`,
    summary: `Sent to ${c.targetService} with the AMQP property type = ${c.messageType}; permissions: ${c.requiredPermissions.join(', ') || 'none'}.`,
    contentType: 'application/json',
    headers: ref(componentRef('RequestHeaders')),
    payload: payloadRef(c, 'Request'),
    bindings: { amqp: { messageType: c.messageType, bindingVersion: AMQP_BINDING } },
  };
}

function replyMessage(c: Contract) {
  return {
    name: `${c.messageType}.reply`,
    title: `${c.messageType} reply`,
    summary: "The reply envelope, published with the request's correlation_id and the service's user_id.",
    contentType: 'application/json',
    payload: payloadRef(c, 'Reply'),
  };
}

/** The contracts of each service, by the service their requests go to. */
function byService(contracts: readonly Contract[]): Map<string, Contract[]> {
  const out = new Map<string, Contract[]>();
  const sorted = [...contracts].sort((a, b) =>
    a.messageType < b.messageType ? -1 : a.messageType > b.messageType ? 1 : 0,
  );
  for (const c of sorted) out.set(c.targetService, [...(out.get(c.targetService) ?? []), c]);
  return out;
}

/**
 * The AsyncAPI 3.0 document of the bus under prefix `prefix`, from the gateway's side: the exchanges, a request
 * channel per service with a message per message type (payload and headers), the reply envelope of each, the
 * announcements and the discovery requests, on the servers of `busUrl` (BUS_URL: the nodes without their
 * credentials, or none for the embedded bus). Every payload and header schema is a titled component. Pure: same
 * contracts, prefix and BUS_URL, same document.
 */
export function buildAsyncApiDocument(
  contracts: readonly Contract[],
  prefix: string,
  busUrl: string,
): AsyncApiDocument {
  const names = new BusNames(prefix);
  const bus = busLocation(busUrl);
  const schemas: Record<string, JsonSchema> = structuredClone(SHARED_SCHEMAS);
  const channels: Record<string, unknown> = {};
  const operations: Record<string, unknown> = {};
  const replyMessages: Record<string, unknown> = {};
  for (const [service, list] of byService(contracts)) {
    const messages: Record<string, unknown> = {};
    for (const c of list) {
      for (const part of ['Input', 'Output'] as const) {
        const name = componentName(c.messageType, part);
        schemas[name] = embedSchema(part === 'Input' ? c.inputSchema : c.outputSchema, name);
      }
      Object.assign(schemas, messageSchemas(c));
      messages[key(c.messageType)] = requestMessage(c);
      replyMessages[key(`${c.messageType}.reply`)] = replyMessage(c);
    }
    const channel = key(`requests.${service}`);
    channels[channel] = {
      address: service,
      title: `Requests to ${service}`,
      description: `Published to ${names.requestExchange} with routing key ${service}; consumed from the work queue ${names.serviceQueue(service)} (not durable, not auto-delete, x-expires ${WORK_QUEUE_EXPIRES_MS}).`,
      messages,
      bindings: exchangeBinding(names.requestExchange, bus.vhost),
    };
    operations[key(`request.${service}`)] = {
      action: 'send',
      channel: ref(`#/channels/${channel}`),
      summary: `The gateway sends ${service} its requests (mandatory, expiration = the timeout, user_id = the gateway's broker user).`,
      messages: list.map((c) => ref(`#/channels/${channel}/messages/${key(c.messageType)}`)),
      reply: {
        channel: ref('#/channels/replies'),
        messages: list.map((c) => ref(`#/channels/replies/messages/${key(`${c.messageType}.reply`)}`)),
      },
      bindings: { amqp: { mandatory: true, deliveryMode: 1, ack: true, bindingVersion: AMQP_BINDING } },
    };
  }
  channels.replies = {
    address: null,
    title: 'Replies',
    description: `Published to the service's own ${names.serviceReplyExchange('<service>')} with routing key = the request's reply_to, as received (the gateway's exclusive queue for the service, ${names.replyQueue('<uuid>', '<service>')}); a service's broker user may publish only there, and only keys ending in its own name.`,
    messages: replyMessages,
    bindings: exchangeBinding(names.serviceReplyExchange('{service}'), bus.vhost),
  };
  channels.announcements = {
    address: 'announce.{service}',
    title: 'Announcements and withdrawals',
    description: `Published to the service's own ${names.serviceAnnounceExchange('<service>')}; re-announced every ttlMs / 3, user_id = the service's broker user.`,
    parameters: { service: { description: "The announcing service: the same as the body's service." } },
    messages: {
      announcement: {
        name: 'announcement',
        contentType: 'application/json',
        payload: ref(componentRef('Announcement')),
      },
    },
    bindings: exchangeBinding(names.serviceAnnounceExchange('{service}'), bus.vhost),
  };
  channels.discovery = {
    address: DISCOVER_KEY,
    title: 'Discovery requests',
    description: `Published to ${names.discoveryExchange} by the gateway (services only read it): every instance announces at once.`,
    messages: {
      discover: { name: 'discover', contentType: 'application/json', payload: ref(componentRef('DiscoveryRequest')) },
    },
    bindings: exchangeBinding(names.discoveryExchange, bus.vhost),
  };
  operations.receiveAnnouncements = {
    action: 'receive',
    channel: ref('#/channels/announcements'),
    messages: [ref('#/channels/announcements/messages/announcement')],
  };
  operations.askForAnnouncements = {
    action: 'send',
    channel: ref('#/channels/discovery'),
    messages: [ref('#/channels/discovery/messages/discover')],
  };
  const used = new Set(Object.keys(schemas));
  for (const schema of Object.values(schemas)) nestedTitles(schema, used);
  for (const [name, schema] of Object.entries(schemas)) addTitles(schema, name, used, true);
  return {
    asyncapi: '3.0.0',
    info: {
      title: 'Contracts gateway bus',
      version: contractsFingerprint(contracts),
      description:
        'The message bus between the gateway and its services (AMQP 0-9-1), generated from the contracts the gateway ' +
        'serves now; it changes when they do. docs/bus-protocol.md is the prose of the same protocol.' +
        bus.note,
      license: { name: 'MIT' },
    },
    defaultContentType: 'application/json',
    ...(bus.servers ? { servers: bus.servers } : {}),
    channels,
    operations,
    components: { schemas },
  };
}
