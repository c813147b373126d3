import { leaseHold } from '../contracts/lease-hold';
import type { Announcement, Contract } from '../contracts/types';
import { FirstUsePins } from '../contracts/first-use';
import { ContractRegistry } from '../contracts/registry';
import { AnnouncementInbox } from '../contracts/inbox';
import type { Transport } from '../bus/transport';
import type { Settings } from '../settings';
import type { Logger } from '../logger';
import { startWithRetry } from '../bus/start-with-retry';
import { errorMessage } from '../errors/describe';
import { RoutePlan } from '../contracts/route-plan';
import { DiscoveryGrace } from '../contracts/discovery-grace';

/**
 * Discovery: what the gateway knows of the services on the bus. It owns the registry of announced contracts, the
 * inbox announcements reach it through, the first-use pins, the route plan derived from the registry and the
 * discovery grace; start() listens for announcements, asks every service to announce, keeps the leases and asks
 * again after every reconnect. It subscribes to nothing of its own accord beyond the route plan (made with it):
 * who follows the registry's events is wired in plugin/runtime.ts.
 */
export class Discovery {
  readonly registry: ContractRegistry;
  /** Announcements reach the registry through it: in batches, checked against their broker user. */
  readonly inbox: AnnouncementInbox;
  /** Trust on first use (without a services file): who first held each message type. */
  readonly firstUse: FirstUsePins | undefined;
  /** The routes of the contracts known now, derived once per change: for the config writer, path table, documents. */
  readonly routes: RoutePlan;
  /** After a start or reconnect: until the services have had time to announce, an unknown route is 503, not 404. */
  readonly grace: DiscoveryGrace;
  private starting?: Promise<void>;
  /**
   * Set once announcements are listened to: asked on every bus state change and before each lease check, it tells
   * whether leases are held, and asks every service to announce again once the gateway hears after a deaf spell.
   */
  private hold?: () => boolean;
  private stopped = false;

  constructor(
    private readonly settings: Settings,
    private readonly transport: Transport,
    private readonly log: Logger,
  ) {
    this.grace = new DiscoveryGrace(settings.discoveryGraceMs);
    if (settings.firstUse) {
      this.firstUse = new FirstUsePins(settings.firstUse.file, log);
      if (settings.firstUse.file === undefined)
        log.warn(
          'first-use pins: no data folder (dataDir, DATA_DIR or EG_CONFIG_DIR), so they are lost when the gateway stops',
        );
    }
    this.registry = new ContractRegistry({
      logger: log,
      rules: settings.ownership,
      limits: settings.announcementLimits,
      maxLeaseMs: settings.maxLeaseMs,
      budget: settings.retainedBudget,
      breakingChanges: settings.breakingChanges,
      ...(this.firstUse ? { firstUse: this.firstUse } : {}),
    });
    this.routes = RoutePlan.forSettings(this.registry, settings);
    this.inbox = new AnnouncementInbox(this.registry, {
      intervalMs: settings.announcementApplyIntervalMs,
      announcers: {
        users: settings.announcementUsers,
        required: settings.requireAnnouncementUser,
        listedOnly: settings.servicesFile !== undefined,
      },
      pendingBudget: settings.retainedBudget,
      logger: log,
    });
  }

  contract(messageType: string): Contract | undefined {
    return this.registry.get(messageType);
  }

  /**
   * Connects, listens for announcements and asks every service to announce. Idempotent, and it never
   * rejects: a broker that is not there yet is retried until it is (requests meanwhile get 503).
   */
  start(): Promise<void> {
    this.starting ??= this.connect();
    return this.starting;
  }

  private async connect(): Promise<void> {
    this.transport.onStateChange((state) => {
      // The transport logs the change itself; after a reconnect every service re-announces, so routes come back without a restart.
      if (state !== 'up') this.grace.lost();
      this.hold?.();
    });
    if (!(await startWithRetry(this.transport, this.log, () => this.stopped))) return;
    this.warnIfUnauthenticated();
    await this.transport.onAnnouncement((a: Announcement, origin) => this.inbox.offer(a, origin));
    // No lease runs out while the gateway cannot hear renewals (its bus not up, its announcement listener refused),
    // nor during the grace after.
    const hold = leaseHold(
      () => this.unheard() === undefined,
      () => this.grace.remainingMs(),
      () => this.heardAgain(),
    );
    this.hold = hold;
    // Deaf from the start (the broker refuses the listener): the first check that hears asks the services again.
    hold();
    this.registry.startExpiry(this.settings.leaseCheckIntervalMs, hold);
    await this.askForAnnouncements();
  }

  /**
   * Why the gateway cannot hear the services now (its bus not up, or the broker refuses its announcement listener);
   * undefined while it hears them. Until it does, a route it does not know is not final (noHandler).
   */
  unheard(): string | undefined {
    const state = this.transport.state();
    if (state !== 'up') return `the message bus is ${state}`;
    return this.transport.announcementsUnheard?.();
  }

  /**
   * Hearing again after a deaf spell (a reconnect, a listener the broker let start at last): renewals and answers
   * sent meanwhile were lost, so every instance gets a whole lease to be heard again (services renew every third of
   * one) and every service is asked to announce, with a new grace before a route not known is final.
   */
  private heardAgain(): void {
    this.registry.renewLeases();
    this.grace.lost();
    void this.askForAnnouncements();
  }

  /**
   * Asks every service to announce, and starts the discovery grace. It starts even when the request fails: services
   * also re-announce on their own, every third of their lease.
   */
  private async askForAnnouncements(): Promise<void> {
    try {
      await this.transport.requestDiscovery();
    } catch (e) {
      this.log.warn(`discovery request failed: ${errorMessage(e)}`);
    } finally {
      // Not while deaf: the grace would run out before anyone could be heard (heardAgain asks again then).
      if (this.unheard() === undefined) this.grace.asked();
    }
  }

  /**
   * Once, at start, one line: on a broker, a credential others share (guest, the user of an announcing service, or
   * no required broker users at all) leaves announcements and requests open to whoever else holds it.
   */
  private warnIfUnauthenticated(): void {
    const { requireAnnouncementUser, announcementUsers } = this.settings;
    if (this.transport.kind !== 'amqp') return;
    // The user the transport logs in as (amqplib's default without one: guest).
    const user = this.transport.brokerUser ?? 'guest';
    const sharedWith = Object.keys(announcementUsers).find((service) => announcementUsers[service] === user);
    const open: string[] = [];
    if (!requireAnnouncementUser) {
      const pinned = Object.keys(announcementUsers).length;
      open.push(
        `announcements are unauthenticated: any client of the broker may announce contracts${pinned ? ` for services other than the ${pinned} in announcementUsers` : ''}`,
      );
    }
    if (user === 'guest')
      open.push(
        'the gateway connects as guest, a shared credential: whoever else uses it may publish requests to every service and read announcements',
      );
    else if (sharedWith !== undefined)
      open.push(`the gateway's broker user ${user} is also ${sharedWith}'s: that service may act as the gateway`);
    if (open.length === 0) return;
    this.log.warn(
      `${open.join('; ')}; use per-service broker users and requireAnnouncementUser (docs/operations.md, "Trust on the bus")`,
    );
  }

  /** Stops retrying the bus, the route plan, the inbox, the lease expiry and the pins (the bus is closed after). */
  stop(): void {
    this.stopped = true;
    this.routes.stop();
    this.inbox.stop();
    this.registry.stop();
    this.firstUse?.close();
  }
}
