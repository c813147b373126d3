import { SETTINGS_SCHEMA, resolveSettings } from './settings';
import { obtainRuntime } from './runtime';
import type { PluginContext } from './host/plugin-context';
import { contractRouterPolicy } from '../policies/contract-router';
import { schemaValidationPolicy } from '../policies/schema-validation';
import { jwtDevAuthPolicy } from '../policies/jwt-dev-auth';
import { permissionPolicy } from '../policies/permission';
import { contractAvailableCondition } from '../conditions/contract-available';

/**
 * The Express Gateway plugin. The host calls init() at start and again on every reload of its config, so
 * everything long-lived is created once (obtainRuntime) and only the registrations are repeated.
 */
const plugin = {
  version: '1.0.0',
  policies: ['schema-validation', 'contract-router', 'jwt-dev-auth', 'permission'],
  schema: SETTINGS_SCHEMA,
  init(ctx: PluginContext): void {
    ctx.registerPolicy(schemaValidationPolicy);
    ctx.registerPolicy(contractRouterPolicy);
    ctx.registerPolicy(jwtDevAuthPolicy);
    ctx.registerPolicy(permissionPolicy);
    ctx.registerCondition(contractAvailableCondition);
    const runtime = obtainRuntime(resolveSettings(ctx.settings), ctx.logger);
    // Not awaited: the host's init() is synchronous; discovery writes the routes when services answer.
    void runtime.start();
    runtime.attachHost(ctx);
  },
};

export = plugin;
