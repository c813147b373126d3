import type { Contract, JsonSchema } from '../contracts/types';
import type { EndpointSpec } from '../contracts/endpoint-specs';
import { deriveRoutes } from '../contracts/derive-routes';
import { contractOperation, type OperationContext } from './contract-operation';
import { componentName, componentRef, embedSchema } from './schema-embedding';
import { isRecord } from '../is-record';
import { POLICY_NAMES } from '../policy-names';

/**
 * A route of a hand-written pipeline whose last step is `contract-router` naming a message type: what the OpenAPI
 * document needs to list it with its real path and method and the security its steps apply.
 */
export interface HandWrittenRoute {
  pipeline: string;
  apiEndpoint: string;
  /** Upper case; undefined when the apiEndpoint takes every method (the document then uses the contract's own). */
  method?: string;
  /** An Express path as written; paths with patterns OpenAPI cannot express (`*`, `(…)`) are left out. */
  path: string;
  messageType: string;
  /** jwt-dev-auth before the router: `required`, or `optional` with `public: true`; `none` without that step. */
  authentication: 'required' | 'optional' | 'none';
  /** The permission steps' `required`; undefined when none names any (the contract's then apply). */
  permissions?: string[];
  /** The router's action says `public: true`: no permission is checked. */
  public: boolean;
  /** A schema-validation step's inline `schema`: the body is checked against it, not the contract's. */
  inputSchema?: JsonSchema;
}

type Entry = Record<string, unknown>;

const list = (v: unknown): unknown[] => (Array.isArray(v) ? v : v === undefined || v === null ? [] : [v]);

/** The steps of a pipeline as [name, actions] in order (`- name:` with a list of `{ action, condition }`). */
function steps(pipeline: Entry): Array<[string, Entry[]]> {
  return list(pipeline.policies)
    .filter(isRecord)
    .flatMap((step) => Object.entries(step))
    .map(([name, conditions]) => [
      name,
      list(conditions)
        .filter(isRecord)
        .map((c) => (isRecord(c.action) ? c.action : {})),
    ]);
}

/** The message types a `contract-router` step of a hand-written pipeline names, wherever it stands. */
export function routedMessageTypes(gatewayConfig: unknown, prefix: string): Set<string> {
  const out = new Set<string>();
  const pipelines = isRecord(gatewayConfig) && isRecord(gatewayConfig.pipelines) ? gatewayConfig.pipelines : {};
  for (const [name, pipeline] of Object.entries(pipelines)) {
    if (name.startsWith(prefix) || !isRecord(pipeline)) continue;
    for (const [step, actions] of steps(pipeline)) {
      if (step !== POLICY_NAMES.contractRouter) continue;
      for (const action of actions) if (typeof action.messageType === 'string') out.add(action.messageType);
    }
  }
  return out;
}

/** Express path syntax an OpenAPI path template cannot say: wildcards and inline patterns. */
const PATTERN = /[*()?+]/;

/**
 * The hand-written routes of a gateway config (as the host loaded it) that end in `contract-router` with a
 * `messageType`; entries named with `prefix` are generated and skipped. Pure.
 */
export function handWrittenRoutes(gatewayConfig: unknown, prefix: string): HandWrittenRoute[] {
  if (!isRecord(gatewayConfig)) return [];
  const endpoints = isRecord(gatewayConfig.apiEndpoints) ? gatewayConfig.apiEndpoints : {};
  const pipelines = isRecord(gatewayConfig.pipelines) ? gatewayConfig.pipelines : {};
  const routes: HandWrittenRoute[] = [];
  for (const [pipelineName, pipeline] of Object.entries(pipelines)) {
    if (pipelineName.startsWith(prefix) || !isRecord(pipeline)) continue;
    const all = steps(pipeline);
    const last = all[all.length - 1];
    if (last?.[0] !== POLICY_NAMES.contractRouter) continue;
    const before = all.slice(0, -1);
    // A `- jwt-dev-auth:` with no action requires a token; only actions that all say `public: true` make it optional.
    const auth = before
      .filter(([name]) => name === POLICY_NAMES.jwtDevAuth)
      .map(([, actions]) => actions.length > 0 && actions.every((a) => a.public === true));
    const authentication = auth.length === 0 ? 'none' : auth.every(Boolean) ? 'optional' : 'required';
    const named = before
      .filter(([name]) => name === POLICY_NAMES.permission)
      .flatMap(([, actions]) => actions.flatMap((a) => list(a.required)));
    const permissions =
      named.length > 0 ? [...new Set(named.filter((p): p is string => typeof p === 'string'))] : undefined;
    const inline = before
      .filter(([name]) => name === POLICY_NAMES.schemaValidation)
      .flatMap(([, actions]) => actions)
      .find((a) => isRecord(a.schema));
    for (const action of last[1]) {
      if (typeof action.messageType !== 'string' || action.messageType === '') continue;
      for (const endpointName of list(pipeline.apiEndpoints)) {
        const endpoint = typeof endpointName === 'string' ? endpoints[endpointName] : undefined;
        if (!isRecord(endpoint) || endpoint.pathRegex !== undefined) continue;
        const methods = list(endpoint.methods)
          .flatMap((m) => (typeof m === 'string' ? m.split(',') : []))
          .map((m) => m.trim().toUpperCase())
          .filter((m) => m !== '' && m !== '*');
        for (const path of list(endpoint.paths ?? endpoint.path)) {
          if (
            typeof path !== 'string' ||
            !path.startsWith('/') ||
            PATTERN.test(path.replace(/:[A-Za-z_][A-Za-z0-9_]*/g, ''))
          )
            continue;
          for (const method of methods.length > 0 ? methods : [undefined]) {
            routes.push({
              pipeline: pipelineName,
              apiEndpoint: endpointName as string,
              ...(method ? { method } : {}),
              path,
              messageType: action.messageType,
              authentication,
              ...(permissions ? { permissions } : {}),
              public: action.public === true,
              ...(inline ? { inputSchema: inline.schema as JsonSchema } : {}),
            });
          }
        }
      }
    }
  }
  return routes;
}

/**
 * A hand-written route's operation: built as a generated route's is (the contract's schemas, parameters and
 * answers), with the security its pipeline applies: the permission steps' `required` (the contract's otherwise, unless
 * the router says `public: true`), credentials optional only where nothing needs a caller, and the body schema of a
 * schema-validation step with an inline `schema`. Undefined when no service announces the contract.
 */
export function handWrittenOperation(
  route: HandWrittenRoute,
  ctx: OperationContext & { schemas: Record<string, JsonSchema> },
): { method: string; operation: Record<string, unknown> } | undefined {
  const contract = ctx.contracts.get(route.messageType);
  if (!contract) return undefined;
  const derived = deriveRoutes(contract)[0];
  const method = route.method ?? derived?.method ?? 'POST';
  const permissions =
    route.public || (route.permissions === undefined && contract.public === true)
      ? []
      : (route.permissions ?? contract.requiredPermissions);
  // The contract as this pipeline serves it: anonymous callers get through only when no step needs a caller.
  const served: Contract = {
    ...contract,
    requiredPermissions: permissions,
    public: route.authentication !== 'required' && permissions.length === 0,
  };
  const endpoint: EndpointSpec = {
    name: `${route.pipeline}-${route.apiEndpoint}-${method.toLowerCase()}`,
    method: method as EndpointSpec['method'],
    path: route.path,
    messageType: contract.messageType,
    ...(derived ? { kind: derived.kind } : {}),
    variants: [],
    messageTypes: [contract.messageType],
  };
  const operation = contractOperation(endpoint, { ...ctx, contracts: new Map([[contract.messageType, served]]) });
  if (!operation) return undefined;
  operation.description = `${String(operation.description)}\n\nServed by the hand-written pipeline \`${route.pipeline}\` (apiEndpoint \`${route.apiEndpoint}\`).`;
  operation['x-pipeline'] = route.pipeline;
  const body = (
    operation.requestBody as { content?: Record<string, { schema?: unknown; example?: unknown }> } | undefined
  )?.content?.['application/json'];
  if (route.inputSchema && body) {
    const name = componentName(`pipeline.${route.pipeline}`, 'Input');
    ctx.schemas[name] = embedSchema(route.inputSchema, name);
    body.schema = { $ref: componentRef(name) };
    // The example must be one the pipeline's own schema accepts.
    const example = ctx.example({
      ...contract,
      messageType: `pipeline.${route.pipeline}`,
      inputSchema: route.inputSchema,
    });
    if (example === undefined) delete body.example;
    else body.example = example;
  }
  return { method, operation };
}
