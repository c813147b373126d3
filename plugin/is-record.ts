/**
 * A plain object as JSON or YAML gives one: an object that is neither null nor an array. Every part of the plugin that
 * reads untrusted or hand-written data (announcements, schemas, the services file, the host's config) asks this.
 */
export function isRecord(value: unknown): value is Record<string, unknown> {
  return typeof value === 'object' && value !== null && !Array.isArray(value);
}
