import type { ContractRegistry } from '../contracts/registry';
import { cachedDocument, type CachedDocument } from '../openapi/cache';
import { buildAsyncApiDocument } from './document';

/**
 * The AsyncAPI document, built on the first request after the registry's contracts changed and served from memory
 * until they change again (nobody asks for it on most gateways, so nothing is built at start).
 */
export class AsyncApiCache {
  private cached?: CachedDocument;
  private readonly onChange = (): void => {
    this.cached = undefined;
  };

  constructor(
    private readonly registry: ContractRegistry,
    /** The bus prefix and BUS_URL, read at every build. */
    private readonly bus: () => { prefix: string; url: string },
  ) {}

  start(): this {
    this.registry.on('change', this.onChange);
    return this;
  }

  stop(): void {
    this.registry.off('change', this.onChange);
  }

  /** The settings (the bus prefix, BUS_URL) may have changed: build again on the next request. */
  refresh(): void {
    this.cached = undefined;
  }

  current(): CachedDocument {
    if (this.cached) return this.cached;
    const { prefix, url } = this.bus();
    this.cached = cachedDocument(buildAsyncApiDocument(this.registry.contracts(), prefix, url));
    return this.cached;
  }
}
