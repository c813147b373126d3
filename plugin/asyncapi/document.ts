import type { Contract, JsonSchema } from '../contracts/types';
import { ERROR_CODES } from '../errors/codes';
import { contractsFingerprint } from '../openapi/document';
import { componentName, componentRef, embedSchema } from '../openapi/schema-embedding';
import { BusNames, DISCOVER_KEY, WORK_QUEUE_EXPIRES_MS } from '../bus/amqp/wire';

/** An AsyncAPI 3.0 document (docs/bus-protocol.md says it in prose; this says it for code generators). */
export type AsyncApiDocument = Record<string, unknown>;

/** AMQP bindings of this version (asyncapi/bindings amqp). */
const AMQP_BINDING = '0.3.0';

/** Channel, message and operation keys must match ^[A-Za-z0-9.\-_]+$ (AsyncAPI 3.0 "Components Object"). */
function key(name: string): string {
  return name.replace(/[^A-Za-z0-9._-]/g, '_');
}

const ref = ($ref: string) => ({ $ref });

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
    traceparent: { type: 'string', description: "The caller's W3C trace context, when it sent a valid one." },
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
};

/** A topic exchange as the gateway and the services declare it. */
function exchangeBinding(name: string) {
  return {
    amqp: {
      is: 'routingKey',
      exchange: { name, type: 'topic', durable: true, autoDelete: false, vhost: '/' },
      bindingVersion: AMQP_BINDING,
    },
  };
}

function requestMessage(c: Contract) {
  const input = componentName(c.messageType, 'Input');
  return {
    name: c.messageType,
    title: `${c.messageType} request`,
    summary: `Sent to ${c.targetService} with the AMQP property type = ${c.messageType}; permissions: ${c.requiredPermissions.join(', ') || 'none'}.`,
    contentType: 'application/json',
    headers: ref(componentRef('RequestHeaders')),
    payload: { type: 'object', properties: { input: ref(componentRef(input)) }, required: ['input'] },
    bindings: { amqp: { messageType: c.messageType, bindingVersion: AMQP_BINDING } },
  };
}

function replyMessage(c: Contract) {
  const output = componentName(c.messageType, 'Output');
  const success = {
    type: 'object',
    properties: {
      ok: { const: true },
      result: ref(componentRef(output)),
      status: { type: 'integer', minimum: 200, maximum: 299 },
      location: { type: 'string' },
    },
    required: ['ok'],
  };
  return {
    name: `${c.messageType}.reply`,
    title: `${c.messageType} reply`,
    summary: "The reply envelope, published with the request's correlation_id and the service's user_id.",
    contentType: 'application/json',
    payload: { oneOf: [success, ref(componentRef('ReplyFailure'))] },
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
 * announcements and the discovery requests. Pure: same contracts and prefix, same document.
 */
export function buildAsyncApiDocument(contracts: readonly Contract[], prefix: string): AsyncApiDocument {
  const names = new BusNames(prefix);
  const schemas: Record<string, JsonSchema> = { ...SHARED_SCHEMAS };
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
      messages[key(c.messageType)] = requestMessage(c);
      replyMessages[key(`${c.messageType}.reply`)] = replyMessage(c);
    }
    const channel = key(`requests.${service}`);
    channels[channel] = {
      address: service,
      title: `Requests to ${service}`,
      description: `Published to ${names.requestExchange} with routing key ${service}; consumed from the work queue ${names.serviceQueue(service)} (not durable, not auto-delete, x-expires ${WORK_QUEUE_EXPIRES_MS}).`,
      messages,
      bindings: exchangeBinding(names.requestExchange),
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
    bindings: exchangeBinding(names.serviceReplyExchange('{service}')),
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
    bindings: exchangeBinding(names.serviceAnnounceExchange('{service}')),
  };
  channels.discovery = {
    address: DISCOVER_KEY,
    title: 'Discovery requests',
    description: `Published to ${names.discoveryExchange} by the gateway (services only read it): every instance announces at once.`,
    messages: { discover: { name: 'discover', contentType: 'application/json', payload: { type: 'object' } } },
    bindings: exchangeBinding(names.discoveryExchange),
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
  return {
    asyncapi: '3.0.0',
    info: {
      title: 'Contracts gateway bus',
      version: contractsFingerprint(contracts),
      description:
        'The message bus between the gateway and its services (AMQP 0-9-1), generated from the contracts the gateway ' +
        'serves now; it changes when they do. docs/bus-protocol.md is the prose of the same protocol.',
      license: { name: 'MIT' },
    },
    defaultContentType: 'application/json',
    channels,
    operations,
    components: { schemas },
  };
}
