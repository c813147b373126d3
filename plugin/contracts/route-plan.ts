import type { ContractRegistry } from './registry';
import { buildEndpointSpecs, type EndpointSpecs, type EndpointSpecOptions } from './endpoint-specs';
import type { Contract } from './types';

/** The routes of one state of the registry, with the contracts they were derived from. */
export interface PlannedRoutes extends EndpointSpecs {
  /** The registry's contracts at that change (shared: read them, never change them). */
  contracts: readonly Contract[];
}

/** The routes of `contracts`, with them: what the route plan derives on each change (and tests from fixed contracts). */
export function planRoutes(contracts: readonly Contract[], options: EndpointSpecOptions = {}): PlannedRoutes {
  return { contracts, ...buildEndpointSpecs(contracts, options) };
}

/**
 * The route plan: the routes of the contracts known now, derived once per registry change (on first use after it)
 * and handed to everything that shows or serves them: the config writer, the path table of `routing: table`, the
 * OpenAPI document and the discovery answer. The runtime keeps one; each of them reads it instead of deriving the
 * routes again, so all four agree on one derivation, with the same prefix and exclusions.
 */
export class RoutePlan {
  private current?: PlannedRoutes;
  private derived = 0;
  private readonly onChange = (): void => {
    this.current = undefined;
  };

  constructor(
    private readonly registry: ContractRegistry,
    private readonly options: EndpointSpecOptions,
  ) {
    registry.on('change', this.onChange);
  }

  /** The plan of a gateway with these settings: its generatedPrefix, and no route for excludeFromGeneratedRoutes. */
  static forSettings(
    registry: ContractRegistry,
    settings: { generatedPrefix: string; excludeFromGeneratedRoutes: readonly string[] },
  ): RoutePlan {
    return new RoutePlan(registry, { prefix: settings.generatedPrefix, excluded: settings.excludeFromGeneratedRoutes });
  }

  /** The routes of the registry's contracts now; the same object until the next change. */
  routes(): PlannedRoutes {
    if (!this.current) {
      this.current = planRoutes(this.registry.contracts(), this.options);
      this.derived += 1;
    }
    return this.current;
  }

  /** How many times the routes were derived (tests check it is once per change). */
  derivations(): number {
    return this.derived;
  }

  stop(): void {
    this.registry.off('change', this.onChange);
  }
}
