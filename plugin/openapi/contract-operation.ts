import type { Contract, ContractKind, JsonSchema } from '../contracts/types';
import type { EndpointSpec } from '../contracts/endpoint-specs';
import { successStatus } from '../contracts/success-status';
import { errorResponses, TRACE_HEADERS } from './error-responses';
import { errorStatusesFor } from './error-statuses';
import { pathParameterNames } from './paths';
import { pathParameters, queryParameters, type ParameterObject } from './parameters';
import { componentName, componentRef, withoutProperties } from './schema-embedding';
import { DEFAULT_SECURITY, PUBLIC_SECURITY } from './security';
import { IDEMPOTENCY_KEY_PARAMETER } from './idempotency';
import { takesIdempotencyKey } from '../pipeline/idempotency-key';
import { withoutFields } from './examples';

const BODY_METHODS = new Set(['POST', 'PUT', 'PATCH']);

/** One contract an operation serves; `whenQuery` set when it is reached only with that query parameter. */
interface Served {
  contract: Contract;
  kind?: ContractKind;
  whenQuery?: string;
}

/** What the operation builders share: the contracts by message type and the operationIds already taken. */
export interface OperationContext {
  contracts: ReadonlyMap<string, Contract>;
  operationIds: Set<string>;
  /** The contracts' schemas as embedded in components.schemas (refs re-rooted), by component name. */
  schemas: Readonly<Record<string, JsonSchema>>;
  /** The gateway-wide rate limit is set: every generated route can answer 429. */
  rateLimited: boolean;
  /** The per-address limit of public contracts is on: a route reaching one can answer 429. */
  publicRateLimited: boolean;
  /** A valid input of a contract, made from its input schema (examples.ts), or undefined. */
  example: (contract: Contract) => Record<string, unknown> | undefined;
}

/** Unique operationId: the message type when free, else the endpoint name (unique in the route table). */
export function claimOperationId(ctx: OperationContext, preferred: string, fallback: string): string {
  let id = ctx.operationIds.has(preferred) ? fallback : preferred;
  for (let n = 2; ctx.operationIds.has(id); n += 1) id = `${fallback}-${n}`;
  ctx.operationIds.add(id);
  return id;
}

export function permissionsText(contract: Contract): string {
  if (contract.public) return 'public (no authentication)';
  return contract.requiredPermissions.length > 0
    ? contract.requiredPermissions.map((p) => `\`${p}\``).join(', ')
    : 'authenticated, no particular permission';
}

function servedBy(endpoint: EndpointSpec, ctx: OperationContext): Served[] {
  const served: Served[] = [];
  const main = endpoint.messageType ? ctx.contracts.get(endpoint.messageType) : undefined;
  if (main) served.push({ contract: main, kind: endpoint.kind });
  for (const v of endpoint.variants) {
    const contract = ctx.contracts.get(v.messageType);
    if (contract) served.push({ contract, kind: v.kind, whenQuery: v.whenQuery });
  }
  return served;
}

function successResponse(method: string, served: Served[]): Record<string, unknown> {
  const byStatus = new Map<number, Served[]>();
  for (const s of served) {
    const status = successStatus(s.contract.messageType, method);
    byStatus.set(status, [...(byStatus.get(status) ?? []), s]);
  }
  const out: Record<string, unknown> = {};
  for (const [status, list] of [...byStatus.entries()].sort((a, b) => a[0] - b[0])) {
    const headers: Record<string, unknown> = { ...TRACE_HEADERS };
    if (status === 201) headers.Location = { $ref: '#/components/headers/Location' };
    const names = list.map((s) => s.contract.messageType).join(' / ');
    if (status === 204) {
      out['204'] = { description: `${names}: done, no body.`, headers };
      continue;
    }
    const refs = list.map((s) => ({ $ref: componentRef(componentName(s.contract.messageType, 'Output')) }));
    out[String(status)] = {
      description: list
        .map((s) => `${s.contract.messageType}${s.whenQuery ? ` (with \`${s.whenQuery}\`)` : ''}: its output.`)
        .join(' '),
      headers,
      content: { 'application/json': { schema: refs.length === 1 ? refs[0] : { anyOf: refs } } },
    };
  }
  return out;
}

function describe(served: Served[], method: string): string {
  const lines = served.map((s) => {
    const c = s.contract;
    const how = s.whenQuery ? `With the \`${s.whenQuery}\` query parameter: ` : served.length > 1 ? 'Otherwise: ' : '';
    return `${how}**${c.messageType}** → service \`${c.targetService}\`, answers ${successStatus(c.messageType, method)}. Required permissions: ${permissionsText(c)}.`;
  });
  return lines.join('\n\n');
}

/** The OpenAPI operation of one generated (non-dispatch) endpoint; undefined when none of its contracts is known. */
export function contractOperation(endpoint: EndpointSpec, ctx: OperationContext): Record<string, unknown> | undefined {
  const served = servedBy(endpoint, ctx);
  const primary = served[0];
  if (!primary) return undefined;
  const method = endpoint.method;
  const pathNames = pathParameterNames(endpoint.path);
  const main = served.find((s) => s.whenQuery === undefined);
  const parameters: ParameterObject[] = pathParameters(
    endpoint.path,
    served.map((s) => s.contract.inputSchema),
  );
  let requestBody: Record<string, unknown> | undefined;
  if (BODY_METHODS.has(method)) {
    const input = primary.contract.inputSchema;
    const inputRef = { $ref: componentRef(componentName(primary.contract.messageType, 'Input')) };
    // Path parameters are input fields too, but not body fields: the body schema leaves them out.
    const schema = pathNames.length > 0 ? withoutProperties(embeddedInput(ctx, primary.contract), pathNames) : inputRef;
    const example = withoutFields(ctx.example(primary.contract), pathNames);
    requestBody = {
      required: Array.isArray(input.required) && input.required.some((r) => !pathNames.includes(String(r))),
      content: { 'application/json': example === undefined ? { schema } : { schema, example } },
    };
  } else {
    const seen = new Set(parameters.map((p) => p.name));
    for (const s of [main, ...served.filter((x) => x.whenQuery !== undefined)]) {
      if (!s) continue;
      const params = queryParameters(embeddedInput(ctx, s.contract), pathNames, {
        // A variant's parameters apply only when its query parameter is there; the selector itself is optional
        // when the route also serves a default contract.
        forceOptional: s.whenQuery !== undefined && main !== undefined,
        note:
          s.whenQuery !== undefined && main !== undefined
            ? `(${s.contract.messageType}, with \`${s.whenQuery}\`)`
            : undefined,
      });
      for (const p of params) {
        if (seen.has(p.name)) continue;
        seen.add(p.name);
        parameters.push(p);
      }
    }
  }
  const isPublic = served.every((s) => s.contract.public === true);
  const services = [...new Set(served.map((s) => s.contract.targetService))];
  const operation: Record<string, unknown> = {
    tags: services,
    summary: served.map((s) => s.contract.messageType).join(' / '),
    description: describe(served, method),
    operationId: claimOperationId(ctx, primary.contract.messageType, endpoint.name),
  };
  withParameterExamples(
    parameters,
    served.map((s) => ctx.example(s.contract)),
  );
  // A route shared by several contracts is deprecated only when all of them are: the others still live there.
  if (served.every((s) => s.contract.deprecated === true)) operation.deprecated = true;
  if (served.some((s) => takesIdempotencyKey(method, s.contract.messageType)))
    parameters.push(IDEMPOTENCY_KEY_PARAMETER);
  if (parameters.length > 0) operation.parameters = parameters;
  if (requestBody) operation.requestBody = requestBody;
  operation.responses = {
    ...successResponse(method, served),
    ...errorResponses(
      errorStatusesFor({
        method,
        path: endpoint.path,
        contracts: served.map((s) => s.contract),
        kinds: served.map((s) => s.kind),
        rateLimited: ctx.rateLimited,
        publicRateLimited: ctx.publicRateLimited,
      }),
      { serviceErrors: true },
    ),
  };
  operation.security = isPublic ? PUBLIC_SECURITY : DEFAULT_SECURITY;
  operation['x-message-type'] = primary.contract.messageType;
  operation['x-required-permissions'] = primary.contract.public ? [] : [...primary.contract.requiredPermissions];
  operation['x-contracts'] = served.map((s) => contractSummary(s.contract, s.whenQuery));
  return operation;
}

/** Path and query parameters get the value of their field in the first example that has one (Dredd needs them). */
function withParameterExamples(
  parameters: ParameterObject[],
  examples: ReadonlyArray<Record<string, unknown> | undefined>,
): void {
  for (const p of parameters) {
    const from = examples.find((e) => e !== undefined && Object.hasOwn(e, p.name));
    if (from) p.example = from[p.name];
  }
}

/** How an operation names each contract it serves (x-contracts). */
export function contractSummary(contract: Contract, whenQuery?: string): Record<string, unknown> {
  const out: Record<string, unknown> = {
    messageType: contract.messageType,
    targetService: contract.targetService,
    requiredPermissions: contract.public ? [] : [...contract.requiredPermissions],
    public: contract.public === true,
  };
  if (whenQuery !== undefined) out.whenQuery = whenQuery;
  if (contract.deprecated === true) out.deprecated = true;
  if (contract.sunset !== undefined) out.sunset = contract.sunset;
  return out;
}

/** The embedded (re-rooted) input schema: parameters inline its property schemas, so their refs must point into the document. */
function embeddedInput(ctx: OperationContext, contract: Contract): JsonSchema {
  const schema = ctx.schemas[componentName(contract.messageType, 'Input')];
  if (!schema) throw new Error(`openapi: the input schema of ${contract.messageType} is not embedded`);
  return schema;
}
