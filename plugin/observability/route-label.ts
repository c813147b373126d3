import type { IncomingMessage } from 'node:http';
import type { Request } from 'express';
import { tableRouteOf } from '../routing/table-match';
import { requestContext } from '../request/context';

/** Labels a request served by a mounted router (static files), which leaves Express no route path to read. */
export function setRouteTemplate(req: Request, template: string): void {
  requestContext(req).routeTemplate = template;
}

/** A request no route took (the host's 404, a request refused before routing). */
export const UNMATCHED_ROUTE = 'unmatched';
/** Past this many distinct templates, new ones are counted together: a label set must never grow without end. */
export const MAX_ROUTE_LABELS = 2000;
export const OTHER_ROUTE = 'other';

/** The route labels one request observer has handed out (the runtime's, through Observability), capped. */
export class RouteLabels {
  private readonly seen = new Set<string>();

  /**
   * The route template of a request for metric labels and span names: the path-table route (`routing: table`), else
   * the template a mounted router set (setRouteTemplate), else the Express route that served it (`/api/users/:userId`,
   * `/health`), else `unmatched`. Never the raw path, so ids
   * in paths do not multiply the series.
   */
  of(req: IncomingMessage): string {
    const template =
      tableRouteOf(req as Request) ?? requestContext(req as Request).routeTemplate ?? expressRoute(req as Request);
    if (template === undefined) return UNMATCHED_ROUTE;
    if (this.seen.has(template)) return template;
    if (this.seen.size >= MAX_ROUTE_LABELS) return OTHER_ROUTE;
    this.seen.add(template);
    return template;
  }
}

function expressRoute(req: Request): string | undefined {
  const path = (req.route as { path?: unknown } | undefined)?.path;
  return typeof path === 'string' ? path : undefined;
}
