import pluralize from 'pluralize';
import { camelCase, paramCase } from 'change-case';
import type { Contract, ContractKind, DerivedRoute } from './types';

/** The generic route every "other" command can be sent through; the body names the message type. */
const ACTIONS_PATH = '/api/actions';
/** The generic route every "other" query can be sent through; the query string names the message type. */
const DATA_PATH = '/api/data';

/** How a message type reads under the naming table (docs/endpoints.md). `resource` is the PascalCase resource words. */
export interface Classification {
  kind: ContractKind;
  /** For create/update/delete/get/list: the resource as written in the name (e.g. `OrderItem`, `Users`). */
  resource?: string;
  /** For command/query: the action name without its suffix (e.g. `ResetPassword`, `create-product`). */
  action?: string;
}

// Resource patterns of the naming table. The resource must start upper-case so that e.g.
// `Getaway…Query` or `Updates…` are not read as a verb plus resource.
const RESOURCE_PATTERNS: ReadonlyArray<[RegExp, ContractKind]> = [
  [/^Create([A-Z][A-Za-z0-9]*)Command$/, 'create'],
  [/^Update([A-Z][A-Za-z0-9]*)Command$/, 'update'],
  [/^Delete([A-Z][A-Za-z0-9]*)Command$/, 'delete'],
  [/^Get([A-Z][A-Za-z0-9]*)Query$/, 'get'],
  [/^List([A-Z][A-Za-z0-9]*)Query$/, 'list'],
];

/** Classifies a message type by the naming table; anything unmatched is a command or query. */
export function classify(messageType: string): Classification {
  for (const [pattern, kind] of RESOURCE_PATTERNS) {
    const match = pattern.exec(messageType);
    if (match) return { kind, resource: match[1] };
  }
  if (messageType.endsWith('Query')) return { kind: 'query', action: messageType.slice(0, -'Query'.length) };
  if (messageType.endsWith('Command')) return { kind: 'command', action: messageType.slice(0, -'Command'.length) };
  // No suffix at all (`CreateProduct`, `create-product`): an action-style command (the table's "other").
  return { kind: 'command', action: messageType };
}

/** Resource words, normalised through pluralize so `User` and `Users` name the same resource. */
interface ResourceNames {
  /** Path segment: plural, lower-case, kebab-case (`order-items`). */
  plural: string;
  /** Singular camelCase (`orderItem`), the stem of the `:<resource>Id` parameter. */
  singular: string;
}

function resourceNames(resource: string): ResourceNames {
  const words = paramCase(resource).split('-').filter(Boolean);
  // Only the last word carries the number: OrderItems → order + item(s).
  const last = pluralize.singular(words[words.length - 1] ?? resource.toLowerCase());
  const singularWords = [...words.slice(0, -1), last];
  const pluralWords = [...words.slice(0, -1), pluralize.plural(last)];
  return { plural: pluralWords.join('-'), singular: camelCase(singularWords.join(' ')) };
}

/** `:<resource>Id` when the input schema declares that field, else `id`. */
function idParameter(contract: Contract, singular: string): string {
  const candidate = `${singular}Id`;
  const properties = contract.inputSchema?.properties;
  if (properties && typeof properties === 'object' && Object.hasOwn(properties, candidate)) {
    return candidate;
  }
  return 'id';
}

function resourceRoutes(contract: Contract, kind: ContractKind, resource: string): DerivedRoute[] {
  const { plural, singular } = resourceNames(resource);
  const collection = `/api/${plural}`;
  const messageType = contract.messageType;
  const id = idParameter(contract, singular);
  const item = `${collection}/:${id}`;
  switch (kind) {
    case 'create':
      return [{ method: 'POST', path: collection, messageType, kind }];
    case 'update':
      return [{ method: 'PUT', path: item, messageType, kind }];
    case 'delete':
      return [{ method: 'DELETE', path: item, messageType, kind }];
    case 'get':
      // The id may also come as a query-string parameter on the collection path.
      return [
        { method: 'GET', path: item, messageType, kind },
        { method: 'GET', path: collection, messageType, kind, whenQuery: id },
      ];
    default:
      return [{ method: 'GET', path: collection, messageType, kind }];
  }
}

function commandRoutes(messageType: string, action: string): DerivedRoute[] {
  const generic: DerivedRoute = { method: 'POST', path: ACTIONS_PATH, messageType, kind: 'command', dispatch: 'body' };
  const slug = paramCase(action);
  const own = `/api/${slug}`;
  // An action named like a generic route (`ActionsCommand`) stays reachable through the generic one.
  if (!slug || own === ACTIONS_PATH) return [generic];
  return [{ method: 'POST', path: own, messageType, kind: 'command' }, generic];
}

/**
 * The HTTP routes of one contract. Pure: the same contract
 * always gives the same routes, in the same order.
 */
export function deriveRoutes(contract: Contract): DerivedRoute[] {
  const { messageType } = contract;
  const classification = classify(messageType);
  if (contract.http) {
    // An explicit override replaces derivation entirely; the kind still drives the success status.
    const { method } = contract.http;
    return contract.http.paths.map((path) => ({ method, path, messageType, kind: classification.kind }));
  }
  const { kind, resource, action } = classification;
  if (resource !== undefined) return resourceRoutes(contract, kind, resource);
  if (kind === 'query') return [{ method: 'GET', path: DATA_PATH, messageType, kind, dispatch: 'query' }];
  return commandRoutes(messageType, action ?? messageType);
}
