import type { HostConfig } from '../config-writer/config-sync';
import type { Logger } from '../logger';

/** What the host hands init() (express-gateway lib/plugins.js PluginContext); only what we use. */
export interface PluginContext extends HostConfig {
  settings: Record<string, unknown>;
  logger: Logger;
  registerPolicy(policy: unknown): void;
  registerCondition(condition: unknown): void;
}
