import * as amqp from 'amqplib';
import { validateAnnouncement } from '../contracts/announcement-validation';
import { isReply } from '../bus/envelope';
import { JSON_TYPE } from '../bus/amqp/wire';
import { urlUser } from '../bus/amqp/connection';
import { ConformanceBus, within, type Seen } from './bus';

export type Outcome = { status: 'pass' | 'fail' | 'skip'; rule: string; detail?: string };

export interface ConformanceOptions {
  bus: string;
  service: string;
  prefix: string;
  /** Another broker user's URL (one that may publish to the default exchange): its requests must be dropped. */
  foreignBus?: string;
  /** The service's own broker user's URL (it may consume the work queue): to make the broker redeliver a request. */
  serviceBus?: string;
  /** The service's process: sent SIGTERM at the end, to check the stop. */
  pid?: number;
  /** The longest lease the gateway keeps (its maxLeaseMs). */
  maxLeaseMs: number;
}

/** How long the kit waits for something that should come at once. */
const PROMPT_MS = 5_000;
/** How long the kit waits before concluding that nothing is coming. */
const SILENCE_MS = 2_000;
/** A message type no service handles. */
const PROBE_TYPE = 'ConformanceProbeQuery';

type Report = (o: Outcome) => void;

const pass = (rule: string, detail?: string): Outcome => ({ status: 'pass', rule, detail });
const fail = (rule: string, detail: string): Outcome => ({ status: 'fail', rule, detail });
const skip = (rule: string, detail: string): Outcome => ({ status: 'skip', rule, detail });

function record(value: unknown): Record<string, unknown> {
  return value && typeof value === 'object' ? (value as Record<string, unknown>) : {};
}

/** What is wrong with an announcement of `service` (undefined: nothing). */
function announcementFault(seen: Seen, service: string, maxLeaseMs: number): string | undefined {
  const checked = validateAnnouncement(seen.body, { maxTtlMs: 3_600_000 });
  if (!checked.ok) return `the gateway would refuse it: ${checked.reason}`;
  const a = checked.announcement;
  if (a.service !== service) return `it names service ${a.service}`;
  if (a.ttlMs > maxLeaseMs) return `its lease ttlMs ${a.ttlMs} is over the gateway's ${maxLeaseMs}`;
  const foreign = a.contracts.find((c) => c.targetService !== service);
  if (foreign) return `${foreign.messageType} has targetService ${foreign.targetService}`;
  if (typeof seen.msg.properties.userId !== 'string') return 'it has no user_id';
  return undefined;
}

/** What is wrong with a reply (undefined: nothing). */
function replyFault(seen: Seen, correlationId: string): string | undefined {
  const p = seen.msg.properties;
  if (p.correlationId !== correlationId) return "its correlation_id is not the request's";
  if (p.contentType !== JSON_TYPE) return `its content_type is ${String(p.contentType)}`;
  if (typeof p.userId !== 'string') return 'it has no user_id';
  if (!isReply(seen.body)) return 'its body is not a reply envelope';
  return undefined;
}

const code = (seen: Seen | undefined): unknown => record(record(seen?.body).error).code;

/** Runs every rule against the running service, reporting each as it ends. */
export async function checkService(bus: ConformanceBus, opts: ConformanceOptions, report: Report): Promise<void> {
  const { service } = opts;
  bus.discover();
  const first = await within(PROMPT_MS, () => bus.announcements.find((s) => record(s.body).withdrawn !== true));
  if (!first) {
    report(
      fail(
        'announces its contracts on a discovery request',
        `no announcement on announce.${service} within ${PROMPT_MS} ms`,
      ),
    );
    return;
  }
  report(pass('announces its contracts on a discovery request'));
  const fault = announcementFault(first, service, opts.maxLeaseMs);
  // A maintenance the gateway would refuse is a fault above (validateAnnouncement); a valid one is named here.
  const maintenance = record(record(first.body).maintenance).retryAfterSeconds;
  report(
    fault
      ? fail('announces valid contracts with a lease', fault)
      : pass(
          'announces valid contracts with a lease',
          maintenance === undefined ? undefined : `in maintenance: its routes answer 503, Retry-After ${maintenance}`,
        ),
  );
  const instance = record(first.body).instanceId;
  const ttl = Number(record(first.body).ttlMs) || opts.maxLeaseMs;

  const id = bus.request(PROBE_TYPE, Date.now() + 10_000);
  const reply = await within(PROMPT_MS, () => bus.repliesTo(id)[0]);
  if (!reply) report(fail('answers with the reply envelope', `no reply to ${PROBE_TYPE} within ${PROMPT_MS} ms`));
  else {
    const bad =
      replyFault(reply, id) ??
      (code(reply) === 'HANDLER_NOT_FOUND'
        ? undefined
        : `a message type it does not handle got ${JSON.stringify(reply.body)}, not HANDLER_NOT_FOUND`);
    report(bad ? fail('answers with the reply envelope', bad) : pass('answers with the reply envelope'));
  }

  const late = bus.request(PROBE_TYPE, Date.now() - 1_000);
  const lateReply = await within(SILENCE_MS, () => bus.repliesTo(late)[0]);
  report(
    lateReply && code(lateReply) !== 'REQUEST_TIMEOUT'
      ? fail('honours the deadline', `a request past its deadline was handled: ${JSON.stringify(lateReply.body)}`)
      : pass('honours the deadline'),
  );

  const twice = bus.request(PROBE_TYPE, Date.now() + 10_000);
  bus.request(PROBE_TYPE, Date.now() + 10_000, twice);
  const both = await within(PROMPT_MS, () => (bus.repliesTo(twice).length >= 2 ? bus.repliesTo(twice) : undefined));
  const valid = (both ?? []).filter((s) => !replyFault(s, twice)).length;
  report(
    valid >= 2
      ? pass('answers a second delivery of the same request')
      : fail('answers a second delivery of the same request', `${valid} valid replies to two deliveries`),
  );

  report(await redelivered(bus, opts));
  report(await foreignRequest(bus, opts));

  const renewed = await within(ttl, () =>
    bus.announcements.find(
      (s) => s.at > first.at + 100 && record(s.body).instanceId === instance && record(s.body).withdrawn !== true,
    ),
  );
  report(
    renewed
      ? pass('renews its lease')
      : fail('renews its lease', `no new announcement from ${String(instance)} within its ttlMs ${ttl}`),
  );

  for (const o of await stopped(bus, opts, instance)) report(o);
}

/**
 * A real redelivery: the kit consumes the work queue beside the service (as the service's user), takes one request
 * and closes its channel without acking it, so the broker hands it to the service flagged `redelivered`.
 */
async function redelivered(bus: ConformanceBus, opts: ConformanceOptions): Promise<Outcome> {
  const rule = 'answers a redelivered request';
  if (!opts.serviceBus) return skip(rule, 'no --service-bus given');
  const model = await amqp.connect(opts.serviceBus, { noDelay: true });
  model.on('error', () => undefined);
  try {
    const ch = await model.createChannel();
    ch.on('error', () => undefined);
    await ch.prefetch(1);
    let held: string | undefined;
    await ch.consume(bus.names.serviceQueue(bus.service), (msg) => {
      held ??= msg ? String(msg.properties.correlationId) : undefined;
    });
    // The broker deals requests out in turn among the consumers: a few reach the kit's.
    for (let i = 0; i < 20 && held === undefined; i++) {
      bus.request(PROBE_TYPE, Date.now() + 10_000);
      await within(200, () => held);
    }
    if (held === undefined) return fail(rule, "no request reached the kit's consumer of the work queue");
    await ch.close();
    const reply = await within(PROMPT_MS, () => bus.repliesTo(held!)[0]);
    if (!reply) return fail(rule, `no reply to a redelivered request within ${PROMPT_MS} ms`);
    const bad = replyFault(reply, held);
    return bad ? fail(rule, bad) : pass(rule);
  } finally {
    await model.close().catch(() => undefined);
  }
}

async function foreignRequest(bus: ConformanceBus, opts: ConformanceOptions): Promise<Outcome> {
  const rule = 'drops a request from another broker user';
  if (!opts.foreignBus) return skip(rule, 'no --foreign-bus given');
  const user = urlUser(opts.foreignBus) ?? 'guest';
  if (user === bus.user) return skip(rule, `--foreign-bus logs in as ${user}, the same user as --bus`);
  const model = await amqp.connect(opts.foreignBus, { noDelay: true });
  model.on('error', () => undefined);
  try {
    const ch = await model.createConfirmChannel();
    ch.on('error', () => undefined);
    const id = ConformanceBus.requestFrom(ch, bus, user, PROBE_TYPE);
    // Under per-service users the broker refuses it outright (no write on the default exchange): nothing to check.
    const refused = await ch.waitForConfirms().then(
      () => false,
      () => true,
    );
    if (refused)
      return skip(rule, `the broker refused ${user}'s publish to the work queue; give a user that may publish there`);
    const answered = await within(SILENCE_MS, () => bus.repliesTo(id)[0]);
    return answered
      ? fail(rule, `a request published by ${user} was answered: ${JSON.stringify(answered.body)}`)
      : pass(rule);
  } finally {
    await model.close().catch(() => undefined);
  }
}

/** SIGTERM to the service, then its withdrawal and its work queue gone. */
async function stopped(bus: ConformanceBus, opts: ConformanceOptions, instance: unknown): Promise<Outcome[]> {
  const rules = ['withdraws on stop', 'deletes its work queue on stop'];
  if (opts.pid === undefined) return rules.map((r) => skip(r, 'no --pid given'));
  const sent = Date.now();
  process.kill(opts.pid, 'SIGTERM');
  const withdrawal = await within(PROMPT_MS, () =>
    bus.announcements.find(
      (s) => s.at >= sent && record(s.body).withdrawn === true && record(s.body).instanceId === instance,
    ),
  );
  const gone = await within(15_000, () => (alive(opts.pid!) ? undefined : true));
  const out = [
    withdrawal
      ? pass(rules[0])
      : fail(rules[0], `no withdrawal from ${String(instance)} within ${PROMPT_MS} ms of SIGTERM`),
  ];
  if (!gone) return [...out, fail(rules[1], 'the process was still running 15 s after SIGTERM')];
  // The gateway's own test: a mandatory request to a service with no queue bound comes back unroutable.
  const id = bus.request(PROBE_TYPE, Date.now() + 10_000);
  const returned = await within(SILENCE_MS, () => (bus.wasReturned(id) ? true : undefined));
  if (returned) return [...out, pass(rules[1])];
  if (opts.serviceBus && (await deleteRefused(opts.serviceBus, bus.names.serviceQueue(bus.service))))
    return [
      ...out,
      skip(rules[1], "the broker definitions declared the work queue, and the service's user may not delete it"),
    ];
  return [
    ...out,
    fail(rules[1], `requests still reach ${bus.names.serviceQueue(bus.service)} after the process ended`),
  ];
}

/**
 * Whether the service's user is refused the deletion of its work queue (per-service users: the definitions own it).
 * Asked only once the service has stopped and left the queue behind: a user that may delete it should have.
 */
async function deleteRefused(serviceBus: string, queue: string): Promise<boolean> {
  const model = await amqp.connect(serviceBus, { noDelay: true });
  model.on('error', () => undefined);
  try {
    const ch = await model.createChannel();
    ch.on('error', () => undefined);
    return await ch.deleteQueue(queue).then(
      () => false,
      (err: unknown) => /ACCESS.REFUSED/i.test(String((err as Error).message)),
    );
  } finally {
    await model.close().catch(() => undefined);
  }
}

function alive(pid: number): boolean {
  try {
    process.kill(pid, 0);
    return true;
  } catch {
    return false;
  }
}
