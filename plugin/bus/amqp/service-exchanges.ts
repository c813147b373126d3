import type { Channel, ChannelModel } from 'amqplib';
import { describeError } from '../../errors/describe';
import { noop } from '../../logger';
import { announceKey, type BusNames } from './wire';

/*
 * The per-service exchanges (P.announcements.<svc>, P.replies.<svc>): with the broker definitions they exist already
 * and a service's user may not declare them (it may configure no name that could become an exchange it reads), so
 * every declaration here runs on a channel of its own, where a refusal closes nothing the caller uses.
 */

/** Whether an error is the broker refusing this user (403) or naming something that is not there (404). */
function refusedOrMissing(err: unknown): boolean {
  return /ACCESS.REFUSED|NOT.FOUND/i.test(describeError(err));
}

/** Runs `what` on a channel of its own; false when the broker refused it or something it names does not exist. */
async function onProbe(model: ChannelModel, what: (ch: Channel) => Promise<unknown>): Promise<boolean> {
  const ch = await model.createChannel();
  ch.on('error', noop);
  try {
    await what(ch);
    return true;
  } catch (err) {
    if (refusedOrMissing(err)) return false;
    throw err;
  } finally {
    await ch.close().catch(noop);
  }
}

/**
 * Declares the topic exchange `name` where this user may, else checks that it exists (the broker definitions'
 * one); false when it neither may nor does.
 */
export async function ensureExchange(model: ChannelModel, name: string): Promise<boolean> {
  if (await onProbe(model, (ch) => ch.assertExchange(name, 'topic', { durable: true }))) return true;
  return onProbe(model, (ch) => ch.checkExchange(name));
}

/** Binds `queue` to `exchange` (declared or checked first); false when this user may not or it does not exist. */
export async function bindIfAllowed(
  model: ChannelModel,
  queue: string,
  exchange: string,
  key: string,
): Promise<boolean> {
  if (!(await ensureExchange(model, exchange))) return false;
  return onProbe(model, (ch) => ch.bindQueue(queue, exchange, key));
}

/**
 * Binds the exchange `source` to `destination` with `key` where this user may (a shared or guest user: the gateway
 * then hears a service it does not know in advance on `destination`); false under per-service users, which may not.
 */
function bindExchangeIfAllowed(
  model: ChannelModel,
  destination: string,
  source: string,
  key: string,
): Promise<boolean> {
  return onProbe(model, (ch) => ch.bindExchange(destination, source, key));
}

/**
 * Makes sure of `service`'s announcement exchange before announcing on it, and binds it to the shared one where this
 * user may (shared or guest users), so that a gateway that does not know the service in advance hears it too.
 */
export async function ensureAnnounceExchange(names: BusNames, model: ChannelModel, service: string): Promise<boolean> {
  const own = names.serviceAnnounceExchange(service);
  if (!(await ensureExchange(model, own))) return false;
  if (await ensureExchange(model, names.announceExchange))
    await bindExchangeIfAllowed(model, names.announceExchange, own, announceKey(service));
  return true;
}
