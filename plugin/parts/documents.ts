import type { ContractRegistry } from '../contracts/registry';
import type { RoutePlan } from '../contracts/route-plan';
import type { Settings } from '../settings';
import type { Logger } from '../logger';
import type { ValidatorCache } from '../validation/validator-cache';
import { OpenApiCache } from '../openapi/cache';
import { AsyncApiCache } from '../asyncapi/cache';
import { handWrittenRoutes } from '../openapi/hand-written';

/** What the documents are made from: the parts plugin/runtime.ts made before them. */
export interface DocumentParts {
  readonly settings: Settings;
  readonly log: Logger;
  readonly registry: ContractRegistry;
  readonly routes: RoutePlan;
  /** The validators schema-validation uses: an example is what the route accepts, compiled once. */
  readonly validators: ValidatorCache;
  /** The gateway config as the host last loaded it: its hand-written pipelines are in the OpenAPI document. */
  readonly gatewayConfig: () => unknown;
}

/**
 * The documents the operations routes serve: the OpenAPI document of the HTTP API (rebuilt on the first request after
 * a change of the contracts, and when the host reloads its config) and the AsyncAPI document of the bus. Made by
 * plugin/runtime.ts, which starts them following the registry (start()).
 */
export class ApiDocuments {
  readonly openApi: OpenApiCache;
  readonly asyncApi: AsyncApiCache;

  constructor(parts: DocumentParts) {
    const { settings, routes, validators } = parts;
    this.openApi = new OpenApiCache(
      parts.registry,
      () => ({
        handWritten: handWrittenRoutes(parts.gatewayConfig(), settings.generatedPrefix),
        debugEndpoints: settings.debugEndpoints,
        rateLimited: settings.rateLimitMax !== undefined,
        publicRateLimited: settings.publicRateLimitMax !== undefined,
        developmentAuth: settings.auth.developmentAuthEnabled,
        routes: routes.routes(),
        checkInput: (contract, input) => {
          const compiled = validators.validator(contract, 'input');
          return compiled.ok && compiled.validate(structuredClone(input)) === true;
        },
      }),
      parts.log,
    );
    this.asyncApi = new AsyncApiCache(parts.registry, () => ({ prefix: settings.busPrefix, url: settings.busUrl }));
  }

  /** Follows the registry's changes from now on; the OpenAPI document is built now. */
  start(): void {
    this.openApi.start();
    this.asyncApi.start();
  }

  /** What the documents read outside the registry changed (the host reloaded its config): build them again. */
  refresh(): void {
    this.openApi.refresh();
    this.asyncApi.refresh();
  }

  stop(): void {
    this.openApi.stop();
    this.asyncApi.stop();
  }
}
