import { deriveRoutes } from './derive-routes';
import type { Contract, DerivedRoute } from './types';
import { RouteHolders } from './route-overlap';
import { contractReferenceProblem } from './limits';

/**
 * Who may own what, as ops pin it in the plugin settings. Pins win over first-come: a message type or path
 * pinned to a service is refused to every other one, whenever it comes. Unset lists mean "any service".
 */
export interface OwnershipRules {
  /** service → message types only it may announce: exact names, or a prefix ending in `*` (`User*`). */
  messageTypes?: Readonly<Record<string, readonly string[]>>;
  /** service → path prefixes (`/api/users`) under which only it may have routes. */
  pathPrefixes?: Readonly<Record<string, readonly string[]>>;
  /** The services that may declare `public: true` contracts; unset: any. */
  publicServices?: readonly string[];
  /** The services that may declare `http.paths`; unset: any. */
  httpPathServices?: readonly string[];
  /** `http.paths` outside `/api/<name>/…` are refused unless this is true. */
  allowPathsOutsideApi?: boolean;
  /** A service may announce only the message types `messageTypes` gives it (a services file: nothing is first-come). */
  ownedOnly?: boolean;
  /** Who first held each message type (trust on first use, without a services file); `messageTypes` wins over it. */
  firstUse?: { holder(messageType: string): { service: string; user?: string } | undefined };
}

/** One service's claim on a message type: its newest contract for it and when the service first claimed it. */
export interface Claim<C extends Contract = Contract> {
  service: string;
  contract: C;
  /** Lower is earlier; the earliest claimant still announcing holds the message type and its routes. */
  seq: number;
  /** The broker user that announced it, when broker users are required (a first-use pin binds it too). */
  user?: string;
}

/** A claim the gateway does not serve, and why. `holder` is the service that keeps what was claimed. */
export interface Refusal {
  service: string;
  messageType: string;
  reason: string;
  holder?: string;
}

/** Two or more services announce one message type; `services[0]` holds it (first-come or pinned). */
export interface RegistryConflict {
  messageType: string;
  services: string[];
}

export interface Ownership<C extends Contract = Contract> {
  /** The served contracts (the claims' own objects), sorted by message type. */
  contracts: C[];
  conflicts: RegistryConflict[];
  /** Sorted by service, then message type. */
  refusals: Refusal[];
}

function compareText(a: string, b: string): number {
  return a < b ? -1 : a > b ? 1 : 0;
}

function matchesType(pattern: string, messageType: string): boolean {
  return pattern.endsWith('*') ? messageType.startsWith(pattern.slice(0, -1)) : pattern === messageType;
}

/** `/api/users` covers `/api/users` and `/api/users/…`, not `/api/usersettings`; in any case, as the host matches. */
function underPrefix(path: string, prefix: string): boolean {
  const base = (prefix.endsWith('/') ? prefix.slice(0, -1) : prefix).toLowerCase();
  const lower = path.toLowerCase();
  return lower === base || lower.startsWith(`${base}/`);
}

/** The service a pin gives `value` to (the longest matching pin for paths), if any. */
function pinnedOwner(pins: OwnershipRules['messageTypes'], matches: (pin: string) => boolean): string | undefined {
  let owner: string | undefined;
  let best = -1;
  for (const [service, patterns] of Object.entries(pins ?? {})) {
    for (const pattern of patterns) {
      if (matches(pattern) && pattern.length > best) {
        owner = service;
        best = pattern.length;
      }
    }
  }
  return owner;
}

// `/api/<literal>`: a pattern or parameter right under /api would catch other services' paths.
const API_PATH = /^\/api\/[A-Za-z0-9._~-]+(\/|$)/;

/**
 * Routes (method and path) a contract takes for itself; the generic dispatch routes are shared by design. A query
 * variant (`GET /api/users?userId`) counts as its path: another service's variant would take part of its traffic.
 */
function ownRoutes(contract: Contract): DerivedRoute[] {
  return deriveRoutes(contract).filter((r) => r.dispatch === undefined);
}

/** Why the rules forbid `service` this contract regardless of what others announce; undefined when allowed. */
function ruleRefusal(service: string, contract: Contract, rules: OwnershipRules): Refusal | undefined {
  const messageType = contract.messageType;
  const refuse = (reason: string, holder?: string): Refusal =>
    holder ? { service, messageType, reason, holder } : { service, messageType, reason };
  // Requests go to the targetService's queue: a contract for another service's queue is a claim on that service.
  if (contract.targetService !== service)
    return refuse(`targetService ${contract.targetService} is not the announcing service`);
  // Not a rule of ownership, but refused the same way: listed and logged, the service's other contracts served.
  const references = contractReferenceProblem(contract);
  if (references !== undefined) return refuse(references);
  const typeOwner = pinnedOwner(rules.messageTypes, (p) => matchesType(p, messageType));
  if (typeOwner !== undefined && typeOwner !== service)
    return refuse(`message type is pinned to ${typeOwner}`, typeOwner);
  if (typeOwner === undefined && rules.ownedOnly)
    return refuse(`message type is not among those the services file gives ${service}`);
  if (contract.public === true && rules.publicServices && !rules.publicServices.includes(service)) {
    return refuse('service may not declare public contracts');
  }
  if (contract.http) {
    if (rules.httpPathServices && !rules.httpPathServices.includes(service))
      return refuse('service may not declare http.paths');
    const outside = contract.http.paths.find((p) => !API_PATH.test(p));
    if (outside !== undefined && rules.allowPathsOutsideApi !== true)
      return refuse(`http.paths ${outside} is outside /api/<name>/`);
  }
  for (const route of deriveRoutes(contract)) {
    if (route.dispatch !== undefined) continue;
    const owner = pinnedOwner(rules.pathPrefixes, (p) => underPrefix(route.path, p));
    if (owner !== undefined && owner !== service) return refuse(`path ${route.path} is pinned to ${owner}`, owner);
  }
  return undefined;
}

/**
 * Why a first-use pin refuses a claim (its holder absent or restarting, or the claim from another broker user), or
 * undefined. A configured pin (`messageTypes`) decides instead of it.
 */
function firstUseRefusal({ service, contract, user }: Claim, rules: OwnershipRules): Refusal | undefined {
  const messageType = contract.messageType;
  const first = rules.firstUse?.holder(messageType);
  if (first === undefined || pinnedOwner(rules.messageTypes, (p) => matchesType(p, messageType)) !== undefined)
    return undefined;
  if (first.service !== service)
    return {
      service,
      messageType,
      reason: `message type is pinned to ${first.service} by first use`,
      holder: first.service,
    };
  if (first.user !== undefined && first.user !== user)
    return {
      service,
      messageType,
      reason: `message type is pinned to ${first.service} as broker user ${first.user} by first use`,
      holder: first.service,
    };
  return undefined;
}

/**
 * Decides which claims are served. Rules first (pins, public, http.paths); then first-come: claims in `seq` order,
 * each message type and each route to the first service that claims it. A later claim by another service is
 * refused whole (its contract is not served), so a service never loses a route it holds to a newcomer, whatever
 * the names. The outcome depends only on the claims and their order, never on service names.
 */
export function resolveOwnership<C extends Contract>(claims: readonly Claim<C>[], rules: OwnershipRules): Ownership<C> {
  const refusals: Refusal[] = [];
  const typeHolder = new Map<string, string>();
  const routeHolders = new RouteHolders();
  const accepted: C[] = [];
  const claimants = new Map<string, Set<string>>();
  const ordered = [...claims].sort(
    (a, b) =>
      a.seq - b.seq || compareText(a.service, b.service) || compareText(a.contract.messageType, b.contract.messageType),
  );
  for (const claim of ordered) {
    const { service, contract } = claim;
    const messageType = contract.messageType;
    const named = claimants.get(messageType) ?? new Set<string>();
    named.add(service);
    claimants.set(messageType, named);
    const ruled = ruleRefusal(service, contract, rules);
    if (ruled) {
      refusals.push(ruled);
      continue;
    }
    const heldBy = typeHolder.get(messageType);
    if (heldBy !== undefined && heldBy !== service) {
      refusals.push({ service, messageType, reason: `message type is held by ${heldBy}`, holder: heldBy });
      continue;
    }
    const pinned = firstUseRefusal(claim, rules);
    if (pinned) {
      refusals.push(pinned);
      continue;
    }
    const routes = ownRoutes(contract);
    // A route is taken when another service holds one that can match the same requests (case, parameter names).
    const taken = routes
      .map((r) => ({ r, held: routeHolders.heldByOther(r.method, r.path, service) }))
      .find((t) => t.held !== undefined);
    if (taken?.held !== undefined) {
      const { held, r } = taken;
      const same = held.route === `${r.method} ${r.path}`;
      refusals.push({
        service,
        messageType,
        reason: same
          ? `route ${held.route} is held by ${held.service}`
          : `route ${r.method} ${r.path} overlaps ${held.route}, held by ${held.service}`,
        holder: held.service,
      });
      continue;
    }
    typeHolder.set(messageType, service);
    for (const r of routes) routeHolders.add(r.method, r.path, service);
    accepted.push(contract);
  }
  const conflicts: RegistryConflict[] = [];
  for (const [messageType, named] of claimants) {
    if (named.size < 2) continue;
    const holder = typeHolder.get(messageType);
    const others = [...named].filter((s) => s !== holder).sort(compareText);
    conflicts.push({ messageType, services: holder === undefined ? others : [holder, ...others] });
  }
  conflicts.sort((a, b) => compareText(a.messageType, b.messageType));
  refusals.sort((a, b) => compareText(a.service, b.service) || compareText(a.messageType, b.messageType));
  accepted.sort((a, b) => compareText(a.messageType, b.messageType));
  return { contracts: accepted, conflicts, refusals };
}
