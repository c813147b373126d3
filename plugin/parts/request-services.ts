import type { Contract } from '../contracts/types';
import type { ContractRegistry } from '../contracts/registry';
import type { Transport } from '../bus/transport';
import type { Settings } from '../settings';
import type { Logger } from '../logger';
import { TokenVerifiers } from '../auth/verifiers';
import { ValidatorCache } from '../validation/validator-cache';
import { pathTableOf } from '../routing/table-match';
import type { PlannedRoutes, RoutePlan } from '../contracts/route-plan';
import type { PathTable } from '../routing/path-table';
import type { RouteAction } from '../pipeline/resolve-contract';
import type { RateLimitState } from '../host/rate-limiters';
import type { DiscoveryGrace } from '../contracts/discovery-grace';
import { Deprecations } from '../compat/deprecation';
import { OutputSamples } from '../validation/output';
import { ReplyWarnings } from '../contracts/reply-warnings';
import { SuccessStatuses } from '../contracts/success-status';
import type { ServiceGuard } from '../resilience/service-guard';
import type { GatewayMetrics } from '../observability/metrics';

/** What the request services are made from: the parts plugin/runtime.ts made before them. */
export interface RequestServiceParts {
  readonly settings: Settings;
  readonly log: Logger;
  /** The bus, its requests guarded per service (plugin/resilience/). */
  readonly transport: Transport;
  readonly serviceGuard: ServiceGuard;
  readonly registry: ContractRegistry;
  readonly routes: RoutePlan;
  readonly discoveryGrace: DiscoveryGrace;
  readonly rateLimits: RateLimitState;
  readonly metrics: GatewayMetrics | undefined;
  /** The graceful stop: a request that reaches the bus once its grace has run out is answered 503. */
  readonly stopping: { readonly isAborted: boolean };
}

/**
 * What a request uses, and nothing it does not: the settings and log, the guarded bus, the contracts known now and
 * whether the routes are known yet (it is a ContractSource, plugin/pipeline/resolve-contract.ts), the path table, the
 * token verifiers, the validators, the rate limiters, the metrics, and what contract-router remembers of replies.
 * Every policy factory takes the fields it reads of it (a Pick of this type), never the runtime. It subscribes to
 * nothing itself: the validators and deprecations are kept in step with the registry by plugin/runtime.ts.
 */
export class RequestServices {
  readonly settings: Settings;
  readonly log: Logger;
  readonly transport: Transport;
  readonly serviceGuard: ServiceGuard;
  readonly discoveryGrace: DiscoveryGrace;
  /** contract-rate-limit's limiters and the health of their store, kept across reloads. */
  readonly rateLimits: RateLimitState;
  /** Prometheus metrics, with a metrics port. */
  readonly metrics: GatewayMetrics | undefined;
  readonly stopping: { readonly isAborted: boolean };
  /** One token verifier per auth configuration, shared by every jwt-dev-auth step, contract-rate-limit and discovery. */
  readonly verifiers = new TokenVerifiers();
  /** The validators of the discovered contracts: every contract is compiled as it is discovered (wired in runtime.ts). */
  readonly validators: ValidatorCache;
  /** The Deprecation and Sunset headers of deprecated contracts' routes, kept in step with the registry. */
  readonly deprecations = new Deprecations();
  /** contract-router's memory of replies: outputs that matched their schema, problems already logged, route kinds. */
  readonly outputSamples = new OutputSamples();
  readonly replyWarnings = new ReplyWarnings();
  readonly successStatuses = new SuccessStatuses();
  private readonly registry: ContractRegistry;
  private readonly routes: RoutePlan;
  /** The path table, and the plan it was built from. */
  private table?: { of: PlannedRoutes; paths: PathTable<RouteAction> };

  constructor(parts: RequestServiceParts) {
    this.settings = parts.settings;
    this.log = parts.log;
    this.transport = parts.transport;
    this.serviceGuard = parts.serviceGuard;
    this.discoveryGrace = parts.discoveryGrace;
    this.rateLimits = parts.rateLimits;
    this.metrics = parts.metrics;
    this.stopping = parts.stopping;
    this.registry = parts.registry;
    this.routes = parts.routes;
    this.validators = new ValidatorCache({ log: parts.log });
  }

  /** The contract of a message type now (the registry's pooled object), read on every request. */
  contract(messageType: string): Contract | undefined {
    return this.registry.get(messageType);
  }

  /**
   * The path table of `routing: table`, from the contracts known now (not from gateway.config.yml, which the host
   * reloads later): a contract announced is routed from its next request on.
   */
  pathTable(): PathTable<RouteAction> {
    // Rebuilt on the first request after a change: when the route plan is a new one.
    const plan = this.routes.routes();
    if (this.table?.of !== plan) this.table = { of: plan, paths: pathTableOf(plan.endpoints) };
    return this.table.paths;
  }
}
