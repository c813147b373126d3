import { hostSettingsSchema } from './settings-validation';
import { settingsForInit } from './startup-settings';
import { attachGracefulStop } from './shutdown';
import { obtainRuntime } from './runtime';
import type { PluginContext } from './host/plugin-context';
import { contractRouterPolicy } from '../policies/contract-router';
import { schemaValidationPolicy } from '../policies/schema-validation';
import { jwtDevAuthPolicy } from '../policies/jwt-dev-auth';
import { permissionPolicy } from '../policies/permission';
import { requestTracePolicy } from '../policies/request-trace';
import { contractRateLimitPolicy } from '../policies/contract-rate-limit';
import { contractAvailableCondition } from '../conditions/contract-available';
import { notFoundPolicy } from '../policies/not-found';
import { mountOperationsRoutes } from './operations/register';

/**
 * The Express Gateway plugin. The host calls init() at start and again on every reload of its config, so
 * everything long-lived is created once (obtainRuntime) and only the registrations are repeated.
 */
const plugin = {
  version: '1.0.0',
  policies: ['schema-validation', 'contract-router', 'jwt-dev-auth', 'permission', 'request-trace', 'contract-rate-limit', 'not-found'],
  // Constraint-free for the host: on a bad value it would only log and skip the plugin; settingsForInit stops the start instead.
  schema: hostSettingsSchema(),
  init(ctx: PluginContext): void {
    ctx.registerPolicy(schemaValidationPolicy);
    ctx.registerPolicy(contractRouterPolicy);
    ctx.registerPolicy(jwtDevAuthPolicy);
    ctx.registerPolicy(permissionPolicy);
    ctx.registerPolicy(requestTracePolicy);
    ctx.registerPolicy(contractRateLimitPolicy);
    ctx.registerPolicy(notFoundPolicy);
    ctx.registerCondition(contractAvailableCondition);
    const runtime = obtainRuntime(settingsForInit(ctx.settings, ctx.logger), ctx.logger);
    // Not awaited: the host's init() is synchronous; discovery writes the routes when services answer.
    void runtime.start();
    runtime.attachHost(ctx);
    // /health, /api-docs, /api/discovery/contracts, /debug/contracts: the host replays every registered gateway
    // route on the same app at each reload, so they are registered by the first init() of the process only.
    if (!runtime.gatewayRoutesRegistered) {
      runtime.gatewayRoutesRegistered = true;
      ctx.registerGatewayRoute(mountOperationsRoutes);
    }
    attachGracefulStop(ctx.eventBus, () => runtime.settings.shutdownGraceMs, ctx.logger);
  },
};

export = plugin;
