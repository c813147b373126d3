import type { Options } from 'amqplib';

/*
 * BUS_URL may list the nodes of a RabbitMQ cluster, separated by commas. Every address must log in as the same user
 * to the same vhost (the user is what RabbitMQ checks `user_id` against, and the topology lives in one vhost). A
 * process starts on a random node, so that many processes spread over the cluster, and moves to the next one in the
 * list whenever its connection is lost or an attempt fails.
 */

/** One node of BUS_URL, parsed once. */
export interface BrokerAddress {
  /** `host:port`, as /health and the metrics show the node (no credentials). */
  readonly node: string;
  /** The address without credentials, for log lines. */
  readonly redacted: string;
  readonly user: string;
  /** The password as the URL gives it ('' for none), taken out of driver messages. */
  readonly password: string;
  readonly vhost: string;
  /** What amqplib connects with (the object form of its URL). */
  readonly options: Options.Connect;
}

/**
 * The AMQP heartbeat (seconds) when an address names none. amqplib would take RabbitMQ's 60 s, so a node that stops
 * answering without closing its sockets (a stalled VM, a partition) went unnoticed for two minutes; amqplib gives up
 * on a connection after two missed beats, so 5 s notices one within 10–15 s. `?heartbeat=` in the address wins.
 */
const DEFAULT_HEARTBEAT_S = 5;

/** Query parameters amqplib reads from a URL string; the object form takes them as fields. */
const QUERY_FIELDS = ['heartbeat', 'frameMax', 'channelMax', 'locale'] as const;

function redact(u: URL): string {
  const copy = new URL(u.toString());
  copy.username = '';
  copy.password = '';
  return copy.toString();
}

/** One amqp:// or amqps:// URL; throws a one-line Error (without the credentials) when it is not one. */
function parseAddress(text: string): BrokerAddress {
  let u: URL;
  try {
    u = new URL(text);
  } catch {
    throw new Error('BUS_URL: an address is not a valid amqp:// URL');
  }
  const protocol = u.protocol.toLowerCase();
  if (protocol !== 'amqp:' && protocol !== 'amqps:')
    throw new Error(`BUS_URL: ${redact(u)} is not an amqp:// or amqps:// URL`);
  if (u.hostname === '') throw new Error(`BUS_URL: ${redact(u)} has no host`);
  const hostname = u.hostname.replace(/^\[|\]$/g, '');
  const port = u.port !== '' ? Number(u.port) : protocol === 'amqp:' ? 5672 : 5671;
  // amqplib logs in as guest/guest when the URL names neither user nor password.
  const anonymous = u.username === '' && u.password === '';
  const user = anonymous ? 'guest' : decodeURIComponent(u.username);
  const password = decodeURIComponent(u.password);
  const rawVhost = u.pathname.length > 1 ? u.pathname.slice(1) : '';
  // amqplib unescapes the vhost itself, as it does for a URL string.
  const options: Options.Connect = {
    protocol: protocol.slice(0, -1),
    hostname,
    port,
    username: user,
    password: anonymous ? 'guest' : password,
    vhost: rawVhost,
  };
  const vhost = rawVhost === '' ? '/' : decodeURIComponent(rawVhost);
  for (const field of QUERY_FIELDS) {
    const value = u.searchParams.get(field);
    if (value !== null) (options as Record<string, unknown>)[field] = field === 'locale' ? value : Number(value);
  }
  options.heartbeat ??= DEFAULT_HEARTBEAT_S;
  return { node: `${u.hostname}:${port}`, redacted: redact(u), user, password, vhost, options };
}

/**
 * The addresses of BUS_URL. Throws one line, naming no credential, for an address that is not an AMQP URL or for a
 * list whose addresses differ in user or vhost.
 */
export function parseBrokerList(busUrl: string): BrokerAddress[] {
  const parts = busUrl
    .split(',')
    .map((part) => part.trim())
    .filter((part) => part !== '');
  if (parts.length === 0) throw new Error('BUS_URL names no broker');
  const addresses = parts.map(parseAddress);
  const first = addresses[0];
  const odd = addresses.find((a) => a.user !== first.user || a.vhost !== first.vhost);
  if (odd) {
    throw new Error(
      `BUS_URL lists brokers with different users or vhosts (${first.node} as ${first.user} on ${first.vhost}, ${odd.node} as ${odd.user} on ${odd.vhost}): every address must use the same user and vhost`,
    );
  }
  return addresses;
}

/** The broker user of BUS_URL (amqplib's guest when it names none); undefined when it does not parse. */
export function brokerListUser(busUrl: string): string | undefined {
  try {
    return parseBrokerList(busUrl)[0].user;
  } catch {
    return undefined;
  }
}

/** BUS_URL without credentials, for messages: every address, comma-separated. */
export function redactBusUrl(busUrl: string): string {
  try {
    return parseBrokerList(busUrl)
      .map((a) => a.redacted)
      .join(',');
  } catch {
    return 'the configured BUS_URL';
  }
}

/** Which node of the list a connection uses now; moves on when told its node was lost. */
export class BrokerList {
  readonly addresses: readonly BrokerAddress[];
  private index: number;
  /**
   * The object amqplib connects with: it reads its fields at every attempt of its recovery, so it is re-filled with
   * the current address's fields whenever the list moves on (one object, kept for the connection's life).
   */
  readonly target: Options.Connect = {};

  constructor(busUrl: string, random: () => number = Math.random) {
    this.addresses = parseBrokerList(busUrl);
    this.index = Math.min(this.addresses.length - 1, Math.floor(random() * this.addresses.length));
    this.fill();
  }

  get current(): BrokerAddress {
    return this.addresses[this.index];
  }

  /** After a failed attempt or a lost connection: the next node (the same one when there is only one). */
  advance(): void {
    if (this.addresses.length < 2) return;
    this.index = (this.index + 1) % this.addresses.length;
    this.fill();
  }

  /** Every address without credentials, for the messages that concern the whole list. */
  describe(): string {
    return this.addresses.map((a) => a.redacted).join(',');
  }

  /** Takes every password of the list out of a driver message. */
  scrub(message: string): string {
    let out = message;
    for (const { password } of this.addresses) if (password.length >= 3) out = out.split(password).join('***');
    return out;
  }

  private fill(): void {
    const target = this.target as Record<string, unknown>;
    for (const key of Object.keys(target)) delete target[key];
    Object.assign(target, this.current.options);
  }
}
