import { createHash } from 'node:crypto';
import type { Contract, JsonSchema } from '../contracts/types';
import type { PlannedRoutes } from '../contracts/route-plan';
import { toOpenApiPath } from './paths';
import { componentName, embedSchema } from './schema-embedding';
import { contractOperation, type OperationContext } from './contract-operation';
import { genericOperation, GENERIC_TAG } from './generic-operations';
import { ERROR_BODY_SCHEMA, errorResponseComponents, HEADER_COMPONENTS } from './error-responses';
import { OPERATIONS_SCHEMAS, OPERATIONS_TAG, operationsPaths } from './operations-paths';
import { securityOf } from './security';
import { withoutUnusedComponents } from './unused-components';
import { handWrittenOperation, type HandWrittenRoute } from './hand-written';
import { compilingInputCheck, exampleMaker, type InputCheck } from './examples';

export interface DocumentOptions {
  /** Routes of hand-written pipelines ending in contract-router (handWrittenRoutes of the host's config). */
  handWritten?: readonly HandWrittenRoute[];
  /** List GET /debug/contracts (only when it is served). */
  debugEndpoints?: boolean;
  /** The gateway-wide rate limit is set (settings rateLimitMax): every generated route can answer 429. */
  rateLimited?: boolean;
  /** The per-address limit of public contracts is on (settings publicRateLimitMax): their routes can answer 429. */
  publicRateLimited?: boolean;
  /** Development auth is on: its header schemes are listed (and accepted by protected operations). */
  developmentAuth?: boolean;
  /** Checks a generated example against its contract; by default the schema is compiled here. */
  checkInput?: InputCheck;
  title?: string;
}

/** The package's licence (package.json `license`). */
const LICENSE = { name: 'MIT', identifier: 'MIT' };

export type OpenApiDocument = Record<string, unknown> & { paths: Record<string, Record<string, unknown>> };

/** A short fingerprint of the contracts: the document's info.version, so a client can tell two API surfaces apart. */
export function contractsFingerprint(contracts: readonly Contract[]): string {
  const sorted = [...contracts].sort((a, b) =>
    a.messageType < b.messageType ? -1 : a.messageType > b.messageType ? 1 : 0,
  );
  return createHash('sha256').update(JSON.stringify(sorted)).digest('hex').slice(0, 12);
}

/**
 * The OpenAPI 3.1 document of the API the gateway serves for the route plan's contracts: exactly its routes (those
 * the config writer writes), the hand-written routes that end in contract-router, plus the gateway's own endpoints.
 * Pure: same routes and options, same document.
 */
export function buildOpenApiDocument(routes: PlannedRoutes, options: DocumentOptions = {}): OpenApiDocument {
  const sorted = [...routes.contracts].sort((a, b) =>
    a.messageType < b.messageType ? -1 : a.messageType > b.messageType ? 1 : 0,
  );
  const byType = new Map(sorted.map((c) => [c.messageType, c] as const));
  const schemas: Record<string, JsonSchema> = {};
  for (const c of [...byType.values()]) {
    schemas[componentName(c.messageType, 'Input')] = embedSchema(c.inputSchema, componentName(c.messageType, 'Input'));
    schemas[componentName(c.messageType, 'Output')] = embedSchema(
      c.outputSchema,
      componentName(c.messageType, 'Output'),
    );
  }
  const ctx: OperationContext = {
    contracts: byType,
    operationIds: new Set(),
    schemas,
    rateLimited: options.rateLimited === true,
    publicRateLimited: options.publicRateLimited === true,
    example: exampleMaker(options.checkInput ?? compilingInputCheck),
  };
  const paths: Record<string, Record<string, unknown>> = {};
  for (const endpoint of routes.endpoints) {
    const operation = endpoint.dispatch ? genericOperation(endpoint, ctx) : contractOperation(endpoint, ctx);
    if (!operation) continue;
    const key = toOpenApiPath(endpoint.path);
    paths[key] = { ...paths[key], [endpoint.method.toLowerCase()]: operation };
  }
  // After the generated ones: on the same method and path, the host runs the hand-written entry written before them.
  for (const route of options.handWritten ?? []) {
    const built = handWrittenOperation(route, { ...ctx, schemas });
    if (!built) continue;
    const key = toOpenApiPath(route.path);
    paths[key] = { ...paths[key], [built.method.toLowerCase()]: built.operation };
  }
  Object.assign(paths, operationsPaths({ debugEndpoints: options.debugEndpoints === true }));
  const secured = securityOf(paths, options.developmentAuth === true);
  return {
    openapi: '3.1.0',
    info: {
      title: options.title ?? 'Contracts gateway API',
      version: contractsFingerprint(routes.contracts),
      license: LICENSE,
      description:
        'Generated from the service contracts the gateway discovered on the message bus; it changes when they do. ' +
        'Each operation names its contract (`x-message-type`, `x-contracts`) and the permissions the caller must hold ' +
        '(`x-required-permissions`; on the generic routes a map of message type → permissions). Errors use one body (`ErrorBody`).',
    },
    // Relative: the document is served by the gateway it describes, wherever that is reached.
    servers: [{ url: '/', description: 'The gateway serving this document.' }],
    tags: usedTags(secured.paths),
    paths: secured.paths,
    components: withoutUnusedComponents(secured.paths, {
      schemas: { ErrorBody: ERROR_BODY_SCHEMA, ...OPERATIONS_SCHEMAS, ...schemas },
      responses: errorResponseComponents(),
      headers: HEADER_COMPONENTS,
      securitySchemes: secured.schemes,
    }),
    security: secured.security,
  };
}

/** The tags the operations use (an empty tag is an empty section in Swagger UI): services by name, then generic, then operations. */
function usedTags(paths: Record<string, Record<string, unknown>>): Array<{ name: string; description: string }> {
  const used = new Set(
    Object.values(paths).flatMap((item) => Object.values(item).flatMap((op) => (op as { tags?: string[] }).tags ?? [])),
  );
  const services = [...used].filter((t) => t !== GENERIC_TAG && t !== OPERATIONS_TAG).sort();
  const tags = services.map((name) => ({ name, description: `Contracts served by ${name}.` }));
  if (used.has(GENERIC_TAG))
    tags.push({ name: GENERIC_TAG, description: 'Generic routes: the request names the message type.' });
  if (used.has(OPERATIONS_TAG)) tags.push({ name: OPERATIONS_TAG, description: "The gateway's own endpoints." });
  return tags;
}
