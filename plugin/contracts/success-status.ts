import { classify } from './derive-routes';

type Kind = ReturnType<typeof classify>['kind'];

/** classify() runs its patterns over the name; contract-router asks on every request, so the kind is remembered. */
const kinds = new Map<string, Kind>();
/** Message types come from announced contracts; the cap only guards against a service inventing names forever. */
const MAX_REMEMBERED = 10_000;

function kindOf(messageType: string): Kind {
  let kind = kinds.get(messageType);
  if (kind === undefined) {
    kind = classify(messageType).kind;
    if (kinds.size >= MAX_REMEMBERED) kinds.clear();
    kinds.set(messageType, kind);
  }
  return kind;
}

/** The success status of a route: create 201, delete 204, every other success 200. */
export function successStatus(messageType: string, method: string): number {
  return kindStatus(kindOf(messageType), method);
}

/** successStatus for a route whose kind is known (the route action carries it): nothing derived per request. */
export function kindStatus(kind: Kind, method: string): number {
  if (kind === 'create' && method === 'POST') return 201;
  if (kind === 'delete' && method === 'DELETE') return 204;
  return 200;
}
