import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { hostSettingsSchema } from './settings/validation';
import { settingsForInit } from './settings/startup';
import { attachGracefulStop } from './shutdown/graceful-stop';
import { currentRuntime, obtainRuntime } from './runtime';
import type { PluginContext } from './host/plugin-context';
import { expressGatewayPort } from './host/express-gateway';
import { createPolicies } from '../policies';
import { contractAvailableCondition } from '../conditions/contract-available';
import { operationsRoutes } from './operations/register';
import { reportListenErrors } from './host/listen-errors';
import { checkPipelines } from './host/config-check';
import { guardedCondition, guardedPolicy } from './host/pipeline-check';
import { PLUGIN_POLICIES } from './policy-names';

/**
 * package.json's version, read at load so the two cannot drift: it sits two levels above dist/plugin/ in the clone
 * and in the installed package alike. The host only compares it with its plugin engine version (a warning if higher).
 */
const PACKAGE_JSON = join(__dirname, '..', '..', 'package.json');
const PACKAGE_VERSION = (JSON.parse(readFileSync(PACKAGE_JSON, 'utf8')) as { version: string }).version;

/**
 * The Express Gateway plugin. The host calls init() at start and again on every reload of its config, so
 * everything long-lived is created once (obtainRuntime) and only the registrations are repeated, each closing
 * over the part of the runtime it uses.
 */
const plugin = {
  version: PACKAGE_VERSION,
  // In the order of a generated pipeline, then the 404 (plugin/policy-names.ts).
  policies: [...PLUGIN_POLICIES],
  // Constraint-free for the host: on a bad value it would only log and skip the plugin; settingsForInit stops the start instead.
  schema: hostSettingsSchema(),
  init(ctx: PluginContext): void {
    // All the plugin asks of the host goes through this port (plugin/host/port.ts).
    const host = expressGatewayPort(ctx);
    const runtime = obtainRuntime(
      settingsForInit(host.pluginSettings, host.logger, currentRuntime()?.session),
      host.logger,
    );
    const { services, session } = runtime;
    const policies = createPolicies(services);
    const condition = contractAvailableCondition(services);
    // Before anything starts: a config that would let a request through unchecked stops the start, or this reload.
    checkPipelines(session, host, policies, [condition]);
    const refusal = () => session.pipelineRefusal();
    for (const policy of policies) host.registerPolicy(guardedPolicy(policy, refusal));
    host.registerCondition(guardedCondition(condition, refusal));
    // Not awaited: the host's init() is synchronous; discovery writes the routes when services answer.
    void runtime.start();
    runtime.attachHost(host);
    // Once per process (session.firstHooking says why): /health, /api-docs, /api/discovery/contracts,
    // /debug/contracts, and the hooks on the host's servers.
    if (session.firstHooking()) {
      host.registerGatewayRoute(operationsRoutes(runtime));
      // Before the host listens: a port in use ends the start with one line, not a stack trace.
      reportListenErrors();
      attachGracefulStop(runtime.gracefulStop, host, () => runtime.settings.shutdownGraceMs, host.logger);
      // Trace ids on every answer; the error body for requests Node's parser refuses (431, bad headers, unknown
      // methods) or that arrive too slowly (408); the receive timeouts and the connection cap.
      host.hookServers(runtime.observability.observer.observe, runtime.settings);
    }
  },
};

export = plugin;
