import { classify } from './derive-routes';

type Kind = ReturnType<typeof classify>['kind'];

/**
 * The success status of a route of this kind: create 201, delete 204, every other success 200. contract-router asks
 * with the kind its route action carries: nothing derived per request.
 */
export function kindStatus(kind: Kind, method: string): number {
  if (kind === 'create' && method === 'POST') return 201;
  if (kind === 'delete' && method === 'DELETE') return 204;
  return 200;
}

/** The success status of a route, its kind worked out from the message type (the OpenAPI document, discovery). */
export function successStatus(messageType: string, method: string): number {
  return kindStatus(classify(messageType).kind, method);
}

/** Message types come from announced contracts; the cap only guards against a service inventing names forever. */
const MAX_REMEMBERED = 10_000;

/**
 * successStatus for contract-router, which asks on every request: classify() runs its patterns over the name, so
 * each message type's kind is remembered. The runtime owns one (docs/design.md, "where state lives").
 */
export class SuccessStatuses {
  private readonly kinds = new Map<string, Kind>();

  of(messageType: string, method: string): number {
    let kind = this.kinds.get(messageType);
    if (kind === undefined) {
      kind = classify(messageType).kind;
      if (this.kinds.size >= MAX_REMEMBERED) this.kinds.clear();
      this.kinds.set(messageType, kind);
    }
    return kindStatus(kind, method);
  }
}
