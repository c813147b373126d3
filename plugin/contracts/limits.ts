/**
 * Bounds on what one announcement may make the gateway hold and work on. Everything in an announcement comes off
 * the bus from whoever can publish there, so every dimension that costs memory or CPU has a cap (each a setting).
 */
export interface AnnouncementLimits {
  /** Bytes of one announcement message, checked by the transport before it is parsed. */
  maxBytes: number;
  /** Contracts in one announcement (the instances of a service replace each other, so: per service). */
  maxContracts: number;
  /** Bytes of one inputSchema or outputSchema as JSON. */
  maxSchemaBytes: number;
  /** Nesting depth of one schema (objects and arrays; the schema itself is 1). */
  maxSchemaDepth: number;
  /** Object members and array items of one schema, counted at every depth. */
  maxSchemaProperties: number;
  /** Live instances of one service; a new one beyond it replaces the one heard from longest ago. */
  maxInstancesPerService: number;
  /** Services with a live instance; an announcement of another service is refused until one goes. */
  maxServices: number;
}

export const DEFAULT_ANNOUNCEMENT_LIMITS: Readonly<AnnouncementLimits> = Object.freeze({
  maxBytes: 256 * 1024,
  maxContracts: 200,
  maxSchemaBytes: 64 * 1024,
  maxSchemaDepth: 32,
  maxSchemaProperties: 4000,
  maxInstancesPerService: 64,
  maxServices: 256,
});

/**
 * Why a schema is over the limits, or undefined. Walks iteratively and stops at the first excess, so a schema
 * nested a million levels deep or with a million members costs no more than the limits allow; only a schema
 * within depth and size is serialised to measure its bytes.
 */
export function schemaOverLimits(schema: unknown, limits: Pick<AnnouncementLimits, 'maxSchemaBytes' | 'maxSchemaDepth' | 'maxSchemaProperties'>): string | undefined {
  const stack: Array<[unknown, number]> = [[schema, 1]];
  let members = 0;
  while (stack.length > 0) {
    const [value, depth] = stack.pop() as [unknown, number];
    if (value === null || typeof value !== 'object') continue;
    if (depth > limits.maxSchemaDepth) return `nests deeper than ${limits.maxSchemaDepth} levels (schemaMaxDepth)`;
    const children: unknown[] = Array.isArray(value) ? value : Object.values(value);
    members += children.length;
    if (members > limits.maxSchemaProperties) return `has more than ${limits.maxSchemaProperties} members (schemaMaxProperties)`;
    for (const child of children) if (child !== null && typeof child === 'object') stack.push([child, depth + 1]);
  }
  const bytes = Buffer.byteLength(JSON.stringify(schema) ?? '', 'utf8');
  if (bytes > limits.maxSchemaBytes) return `is ${bytes} bytes, over ${limits.maxSchemaBytes} (schemaMaxBytes)`;
  return undefined;
}
