import type { Contract } from '../contracts/types';
import { parseIsoDate } from './deprecation-fields';

/** The headers a deprecated (or sunsetting) contract's routes answer with. */
export interface DeprecationHeaders {
  /** RFC 9745: a structured-field date, `@` and Unix seconds. */
  Deprecation?: string;
  /** RFC 8594: an HTTP-date. */
  Sunset?: string;
}

/**
 * The Deprecation and Sunset headers of each contract. A contract says only `deprecated: true`, but the header needs
 * a date: the moment this gateway first served it deprecated, kept while it stays deprecated (never later than its
 * sunset, which RFC 9745 forbids). Updated on every change of the registry; read on every request.
 */
export class Deprecations {
  private readonly since = new Map<string, number>();
  private headers = new Map<string, DeprecationHeaders>();

  constructor(private readonly now: () => number = Date.now) {}

  update(contracts: readonly Contract[]): void {
    const headers = new Map<string, DeprecationHeaders>();
    const deprecated = new Set<string>();
    for (const c of contracts) {
      const sunset = c.sunset !== undefined ? parseIsoDate(c.sunset) : undefined;
      const h: DeprecationHeaders = {};
      if (c.deprecated === true) {
        deprecated.add(c.messageType);
        const since = this.since.get(c.messageType) ?? this.now();
        this.since.set(c.messageType, since);
        h.Deprecation = `@${Math.floor(Math.min(since, sunset ?? since) / 1000)}`;
      }
      if (sunset !== undefined) h.Sunset = new Date(sunset).toUTCString();
      if (h.Deprecation !== undefined || h.Sunset !== undefined) headers.set(c.messageType, h);
    }
    for (const type of this.since.keys()) if (!deprecated.has(type)) this.since.delete(type);
    this.headers = headers;
  }

  /** The headers of a message type's routes; undefined for a contract that is neither deprecated nor sunsetting. */
  of(messageType: string): DeprecationHeaders | undefined {
    return this.headers.get(messageType);
  }
}
