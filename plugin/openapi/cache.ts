import { createHash } from 'node:crypto';
import type { ContractRegistry } from '../contracts/registry';
import type { Logger } from '../logger';
import { buildOpenApiDocument, type DocumentOptions } from './document';
import type { PlannedRoutes } from '../contracts/route-plan';
import { errorMessage } from '../errors/describe';

export interface CachedDocument {
  /** The serialised document, sent as is; only the text is kept (the object graph is several times larger). */
  json: string;
  /** info.version of the document. */
  version: string;
  etag: string;
  generatedAt: Date;
}

/** A built document as it is kept and served: its text, info.version and an ETag of the text. */
export function cachedDocument(document: Record<string, unknown>): CachedDocument {
  const json = JSON.stringify(document);
  const etag = `"${createHash('sha256').update(json).digest('hex').slice(0, 32)}"`;
  return {
    json,
    version: String((document.info as { version?: unknown }).version ?? ''),
    etag,
    generatedAt: new Date(),
  };
}

/**
 * The OpenAPI document, built at start and then on the first request after the registry's contracts changed (its
 * 'change' event), and served from memory until they change again: a flood of changing announcements costs no build
 * nobody asks for. A build that fails keeps the last good document and is logged.
 */
export class OpenApiCache {
  private cached?: CachedDocument;
  private stale = false;
  private builds = 0;
  private readonly onChange = (): void => {
    this.stale = true;
  };

  constructor(
    private readonly registry: ContractRegistry,
    private readonly options: () => DocumentOptions & { routes: PlannedRoutes },
    private readonly log?: Pick<Logger, 'error'>,
  ) {}

  start(): this {
    this.registry.on('change', this.onChange);
    this.rebuild();
    return this;
  }

  stop(): void {
    this.registry.off('change', this.onChange);
  }

  /** Builds the document again now: what options() reads changed (the host reloaded its config). */
  refresh(): void {
    this.rebuild();
  }

  current(): CachedDocument {
    if (!this.cached || this.stale) this.rebuild();
    return this.cached as CachedDocument;
  }

  /** How many times the document was built (tests check that requests do not build it). */
  buildCount(): number {
    return this.builds;
  }

  private rebuild(): void {
    this.stale = false;
    try {
      const options = this.options();
      const document = buildOpenApiDocument(options.routes, options);
      this.cached = cachedDocument(document);
      this.builds += 1;
    } catch (err) {
      this.log?.error(`openapi: could not build the document: ${errorMessage(err)}`);
      if (!this.cached) throw err;
    }
  }
}
