import { resolveAuthConfig, type AuthOverrides } from '../settings/auth';
import type { Logger } from '../logger';
import { INVALID_SETTINGS_EXIT_CODE } from '../settings/startup';
import { listOf, pipelineProblem, type Declared } from './pipeline-check';
import type { HostGatewayConfig } from './port';
import { POLICY_NAMES } from '../policy-names';

const JWT = POLICY_NAMES.jwtDevAuth;

/** What the check needs of the runtime: whether the host runs already (a reload), and where the refusal goes. */
export interface RefusalHolder {
  readonly hostAttached: boolean;
  readonly settings: { readonly writeConfig: boolean };
  readonly log: Logger;
  /** Keeps the problem (undefined: none) until the next check; the plugin's steps refuse to be built while there is one. */
  refusePipelines(problem: string | undefined): void;
}

/**
 * Checks the gateway config the host is about to build its pipelines from (every init(): the start and each
 * reload). A mistake that would let a request through unchecked stops the start with one line and exit status 78,
 * as a bad setting does; on a reload it is logged and the plugin's steps refuse to be built, so the host keeps the
 * routes it had (stopping a serving gateway over an edit would turn a typo into an outage).
 */
export function checkPipelines(
  holder: RefusalHolder,
  config: Pick<HostGatewayConfig, 'gatewayConfig' | 'gatewayConfigPath'>,
  policies: readonly Declared[],
  conditions: readonly Declared[],
  env: NodeJS.ProcessEnv = process.env,
): void {
  const gatewayConfig = config.gatewayConfig();
  const problem =
    pipelineProblem(gatewayConfig, policies, conditions) ??
    keylessAuth(gatewayConfig, holder.settings.writeConfig, env);
  holder.refusePipelines(problem);
  if (problem === undefined) return;
  const file = config.gatewayConfigPath() ?? 'gateway.config.yml';
  if (!holder.hostAttached) {
    process.stderr.write(`[contracts] ${file}: ${problem}. The gateway does not start.\n`);
    process.exit(INVALID_SETTINGS_EXIT_CODE);
  }
  holder.log.error(`${file}: ${problem}; this reload is refused, the routes loaded before stay`);
}

const NO_KEY =
  'no key to verify tokens with: set JWT_SECRET (HS256) or JWKS_URI (RS256), or jwtSecret / jwksUri on its action';

/**
 * A jwt-dev-auth that would answer every token 401 INVALID_TOKEN because it has neither a secret nor a key set (nor
 * development mode, which takes the caller from headers). It is in use when a pipeline has such a step, and
 * always when the plugin writes generated routes: every one of them runs jwt-dev-auth with the environment's keys.
 */
export function keylessAuth(gatewayConfig: unknown, writesRoutes: boolean, env: NodeJS.ProcessEnv): string | undefined {
  if (writesRoutes && !hasKey({}, env)) return `${JWT} of the generated routes has ${NO_KEY}`;
  for (const [pipeline, action] of jwtSteps(gatewayConfig)) {
    if (!hasKey(action, env)) return `pipeline "${pipeline}", step ${JWT}: ${NO_KEY}`;
  }
  return undefined;
}

function hasKey(overrides: AuthOverrides, env: NodeJS.ProcessEnv): boolean {
  try {
    const auth = resolveAuthConfig(overrides, env);
    return auth.jwtSecret !== undefined || auth.jwksUri !== undefined || auth.developmentAuthEnabled;
  } catch {
    // An unusable value is refused with its own message where it is read (start-up, or the step's creation).
    return true;
  }
}

/** Every jwt-dev-auth step of the config, with its pipeline's name and its action. */
function jwtSteps(gatewayConfig: unknown): Array<[string, AuthOverrides]> {
  const pipelines = (gatewayConfig as { pipelines?: unknown } | undefined)?.pipelines;
  if (typeof pipelines !== 'object' || pipelines === null) return [];
  const found: Array<[string, AuthOverrides]> = [];
  for (const [name, pipeline] of Object.entries(pipelines)) {
    for (const entry of listOf((pipeline as { policies?: unknown } | null)?.policies)) {
      if (typeof entry !== 'object' || entry === null || !(JWT in entry)) continue;
      const steps = listOf((entry as Record<string, unknown>)[JWT]);
      for (const step of steps.length ? steps : [{}])
        found.push([name, ((step as { action?: AuthOverrides } | null)?.action ?? {}) as AuthOverrides]);
    }
  }
  return found;
}
