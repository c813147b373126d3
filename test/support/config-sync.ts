import { ConfigSync } from '../../plugin/config-writer/config-sync';
import type { HostConfig } from '../../plugin/host/plugin-context';
import { gatewayConfigOf } from '../../plugin/host/express-gateway';
import { RoutePlan } from '../../plugin/contracts/route-plan';
import type { ContractRegistry } from '../../plugin/contracts/registry';
import type { Settings } from '../../plugin/settings';
import type { Logger } from '../../plugin/logger';
import type { Clock } from '../../plugin/clock';

/**
 * A config writer as the runtime makes one: on the route plan of its settings, here its own (stopped with it), and on
 * the host's config as the adapter hands it on (`host` is shaped like Express Gateway's Config and event bus).
 */
export class TestConfigSync extends ConfigSync {
  private readonly plan: RoutePlan;

  constructor(
    registry: ContractRegistry,
    host: HostConfig,
    settings: Settings,
    log: Logger,
    options: { clock?: Clock } = {},
  ) {
    const plan = RoutePlan.forSettings(registry, settings);
    super(registry, gatewayConfigOf(host), settings, log, { ...options, routes: plan });
    this.plan = plan;
  }

  override stop(): void {
    super.stop();
    this.plan.stop();
  }
}
