import type { Contract, DerivedRoute } from '../contracts/types';
import { deriveRoutes } from '../contracts/derive-routes';
import { diffSchema } from './schema-diff';

type ChangeClass = 'breaking' | 'compatible';

/** One change between two versions of a contract (or of a list of contracts), as clients see it. */
export interface ContractChange {
  messageType: string;
  class: ChangeClass;
  /** A fixed name per kind of change (docs/compatibility.md lists them). */
  rule: string;
  /** Where: `input.name`, `output.items[]`, a route, a permission. */
  at: string;
  message: string;
}

function routeKey(r: DerivedRoute): string {
  const query = r.whenQuery !== undefined ? `?${r.whenQuery}=` : '';
  const dispatch = r.dispatch !== undefined ? ` (messageType ${r.messageType})` : '';
  return `${r.method} ${r.path}${query}${dispatch}`;
}

/**
 * What changed from `before` to `after`, one entry per change, breaking first. An identical pair gives none.
 * Pure: the registry (on each announcement) and `contracts-gateway check-compat` share it.
 */
export function classifyContractChange(before: Contract, after: Contract): ContractChange[] {
  const messageType = after.messageType;
  const changes: ContractChange[] = [];
  const push = (breaking: boolean, rule: string, at: string, message: string): void => {
    changes.push({ messageType, class: breaking ? 'breaking' : 'compatible', rule, at, message });
  };
  const oldRoutes = new Set(deriveRoutes(before).map(routeKey));
  const newRoutes = new Set(deriveRoutes(after).map(routeKey));
  for (const r of oldRoutes) if (!newRoutes.has(r)) push(true, 'route-removed', r, `route ${r} removed`);
  for (const r of newRoutes) if (!oldRoutes.has(r)) push(false, 'route-added', r, `route ${r} added`);
  const oldPermissions = new Set(before.requiredPermissions);
  for (const p of after.requiredPermissions)
    if (!oldPermissions.has(p))
      push(true, 'permission-added', p, `permission ${p} required now: callers without it get 403`);
  const newPermissions = new Set(after.requiredPermissions);
  for (const p of before.requiredPermissions)
    if (!newPermissions.has(p)) push(false, 'permission-removed', p, `permission ${p} no longer required`);
  if (before.public === true && after.public !== true)
    push(true, 'public-removed', 'public', 'no longer public: callers need a token now');
  if (before.public !== true && after.public === true)
    push(false, 'public-added', 'public', 'public now: no token needed');
  for (const c of diffSchema(before.inputSchema, after.inputSchema, 'input')) push(c.breaking, c.rule, c.at, c.message);
  for (const c of diffSchema(before.outputSchema, after.outputSchema, 'output'))
    push(c.breaking, c.rule, c.at, c.message);
  if (before.deprecated !== true && after.deprecated === true)
    push(false, 'deprecated', 'deprecated', `deprecated${after.sunset ? `, sunset ${after.sunset}` : ''}`);
  return changes.sort((a, b) => (a.class === b.class ? 0 : a.class === 'breaking' ? -1 : 1));
}

/**
 * What changed from one list of contracts to another (a service's contracts files, or what a gateway serves against
 * a new version): a message type missing from `after` takes its routes with it.
 */
export function classifyContractLists(before: readonly Contract[], after: readonly Contract[]): ContractChange[] {
  const newByType = new Map(after.map((c) => [c.messageType, c]));
  const oldTypes = new Set(before.map((c) => c.messageType));
  const changes: ContractChange[] = [];
  for (const old of before) {
    const next = newByType.get(old.messageType);
    if (next === undefined) {
      changes.push({
        messageType: old.messageType,
        class: 'breaking',
        rule: 'contract-removed',
        at: old.messageType,
        message: `contract ${old.messageType} removed with its routes`,
      });
    } else {
      changes.push(...classifyContractChange(old, next));
    }
  }
  for (const added of after) {
    if (!oldTypes.has(added.messageType))
      changes.push({
        messageType: added.messageType,
        class: 'compatible',
        rule: 'contract-added',
        at: added.messageType,
        message: `contract ${added.messageType} added`,
      });
  }
  return changes;
}

export function breakingOf(changes: readonly ContractChange[]): ContractChange[] {
  return changes.filter((c) => c.class === 'breaking');
}
