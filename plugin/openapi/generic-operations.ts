import type { Contract } from '../contracts/types';
import type { EndpointSpec } from '../contracts/endpoint-specs';
import { successStatus } from '../contracts/success-status';
import { errorResponses, TRACE_HEADERS } from './error-responses';
import { claimOperationId, contractSummary, permissionsText, type OperationContext } from './contract-operation';
import { errorStatusesFor } from './error-statuses';
import { componentName, componentRef } from './schema-embedding';
import { DEFAULT_SECURITY, PUBLIC_SECURITY } from './security';
import { IDEMPOTENCY_KEY_PARAMETER } from './idempotency';

export const GENERIC_TAG = 'generic';

function listed(endpoint: EndpointSpec, ctx: OperationContext): Contract[] {
  return endpoint.messageTypes.map((t) => ctx.contracts.get(t)).filter((c): c is Contract => c !== undefined);
}

function catalogue(contracts: Contract[], method: string): string {
  return contracts
    .map(
      (c) =>
        `- **${c.messageType}** → service \`${c.targetService}\`, answers ${successStatus(c.messageType, method)}; permissions: ${permissionsText(c)}`,
    )
    .join('\n');
}

function outputs(contracts: Contract[]): Record<string, unknown> {
  const refs = contracts.map((c) => ({ $ref: componentRef(componentName(c.messageType, 'Output')) }));
  return refs.length === 1 ? (refs[0] as Record<string, unknown>) : { anyOf: refs };
}

/** Examples of POST /api/actions bodies, one per message type whose input has one (`example` when only one). */
function actionExamples(contracts: Contract[], ctx: OperationContext): Record<string, unknown> {
  const examples: Record<string, { summary: string; value: unknown }> = {};
  for (const c of contracts) {
    const input = ctx.example(c);
    if (input !== undefined)
      examples[c.messageType] = { summary: c.messageType, value: { messageType: c.messageType, input } };
  }
  const values = Object.values(examples);
  if (values.length === 0) return {};
  return contracts.length === 1 ? { example: values[0]!.value } : { examples };
}

/**
 * A generic route (docs/endpoints.md): POST /api/actions takes `{ messageType, input }`,
 * GET /api/data takes `messageType` and the input as the other query parameters. What the caller must hold
 * depends on the message type, so `x-required-permissions` maps message type → permissions here.
 */
export function genericOperation(endpoint: EndpointSpec, ctx: OperationContext): Record<string, unknown> | undefined {
  const contracts = listed(endpoint, ctx);
  if (contracts.length === 0) return undefined;
  const method = endpoint.method;
  const kinds = contracts.map(() => (endpoint.dispatch === 'body' ? ('command' as const) : ('query' as const)));
  const operation: Record<string, unknown> = {
    tags: [GENERIC_TAG],
    summary:
      endpoint.dispatch === 'body' ? 'Send any action command by message type' : 'Run any data query by message type',
    description:
      (endpoint.dispatch === 'body'
        ? 'The body names the message type and carries its input: `{"messageType": "…", "input": {…}}`. The input is checked against that contract\'s input schema.'
        : "The `messageType` query parameter names the query; every other query parameter is an input field, converted to the type the contract's input schema gives.") +
      `\n\nMessage types served here:\n${catalogue(contracts, method)}`,
    operationId: claimOperationId(ctx, endpoint.dispatch === 'body' ? 'sendAction' : 'queryData', endpoint.name),
  };
  if (endpoint.dispatch === 'body') {
    operation.parameters = [IDEMPOTENCY_KEY_PARAMETER];
    const variants = contracts.map((c) => ({
      type: 'object',
      title: c.messageType,
      properties: {
        messageType: { const: c.messageType },
        input: { $ref: componentRef(componentName(c.messageType, 'Input')) },
      },
      required: ['messageType'],
    }));
    operation.requestBody = {
      required: true,
      // One message type: its object itself, not a oneOf of one.
      content: {
        'application/json': {
          schema: variants.length === 1 ? variants[0] : { oneOf: variants },
          ...actionExamples(contracts, ctx),
        },
      },
    };
  } else {
    operation.parameters = [
      {
        name: 'messageType',
        in: 'query',
        required: true,
        schema: { type: 'string', enum: contracts.map((c) => c.messageType) },
        description: 'The query to run.',
      },
      {
        name: 'input',
        in: 'query',
        required: false,
        description: "The query's input fields, each as its own query parameter (`field=value`).",
        schema: { type: 'object', additionalProperties: true },
        style: 'form',
        explode: true,
      },
    ];
  }
  const statuses = [...new Set(contracts.map((c) => successStatus(c.messageType, method)))].sort();
  const success: Record<string, unknown> = {};
  for (const status of statuses) {
    const these = contracts.filter((c) => successStatus(c.messageType, method) === status);
    success[String(status)] = {
      description: `The output of the message type sent.`,
      headers: { ...TRACE_HEADERS },
      content: { 'application/json': { schema: outputs(these) } },
    };
  }
  const isPublic = contracts.every((c) => c.public === true);
  const statusesFor = {
    method,
    path: endpoint.path,
    contracts,
    kinds,
    dispatch: endpoint.dispatch,
    rateLimited: ctx.rateLimited,
    publicRateLimited: ctx.publicRateLimited,
  };
  operation.responses = { ...success, ...errorResponses(errorStatusesFor(statusesFor), { serviceErrors: true }) };
  operation.security = isPublic ? PUBLIC_SECURITY : DEFAULT_SECURITY;
  operation['x-required-permissions'] = Object.fromEntries(
    contracts.map((c) => [c.messageType, c.public ? [] : [...c.requiredPermissions]]),
  );
  operation['x-contracts'] = contracts.map((c) => contractSummary(c));
  return operation;
}
