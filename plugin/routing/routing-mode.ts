/** The `routing` setting: how the generated routes reach the host (plugin/settings/index.ts reads it). */
export type RoutingMode = 'auto' | 'endpoints' | 'table';
export const ROUTING_MODES: readonly RoutingMode[] = ['auto', 'endpoints', 'table'];

/**
 * `routing: auto` writes one apiEndpoint per route up to this many generated routes and the table above. The host
 * tries its routes one after another, so each costs every request a little (bench/REPORT.md, "Discovery at
 * scale"); up to here that stays small and ops keep each route listed in gateway.config.yml.
 */
export const AUTO_TABLE_ABOVE = 50;

/** Whether the generated routes should go into one table endpoint (before checking the table can hold them). */
export function wantsTable(mode: RoutingMode, routeCount: number): boolean {
  if (mode === 'auto') return routeCount > AUTO_TABLE_ABOVE;
  return mode === 'table';
}
