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
export function schemaOverLimits(
  schema: unknown,
  limits: Pick<AnnouncementLimits, 'maxSchemaBytes' | 'maxSchemaDepth' | 'maxSchemaProperties'>,
): string | undefined {
  const stack: Array<[unknown, number]> = [[schema, 1]];
  let members = 0;
  while (stack.length > 0) {
    const [value, depth] = stack.pop() as [unknown, number];
    if (value === null || typeof value !== 'object') continue;
    if (depth > limits.maxSchemaDepth) return `nests deeper than ${limits.maxSchemaDepth} levels (schemaMaxDepth)`;
    const children: unknown[] = Array.isArray(value) ? value : Object.values(value);
    members += children.length;
    if (members > limits.maxSchemaProperties)
      return `has more than ${limits.maxSchemaProperties} members (schemaMaxProperties)`;
    for (const child of children) if (child !== null && typeof child === 'object') stack.push([child, depth + 1]);
  }
  const bytes = Buffer.byteLength(JSON.stringify(schema) ?? '', 'utf8');
  if (bytes > limits.maxSchemaBytes) return `is ${bytes} bytes, over ${limits.maxSchemaBytes} (schemaMaxBytes)`;
  return undefined;
}

/** Keywords whose value is a reference to another schema. */
const REFERENCE_KEYWORDS = ['$ref', '$dynamicRef', '$recursiveRef'] as const;

/**
 * Why a schema could make something fetch another document, or undefined. Only references within the schema
 * itself (`#…`) are allowed: ajv never loads a remote schema (such a contract would not compile), and the
 * OpenAPI document must not carry a URL that Swagger UI would then fetch in every reader's browser. A `$id` below
 * the root is refused too (unless a `#name` anchor): it moves the base that the `#` references under it resolve against. Every object is
 * looked at, annotations and examples included, since a document reader may follow a `$ref` wherever it is.
 */
export function schemaReferenceProblem(schema: unknown): string | undefined {
  const stack: Array<[unknown, boolean]> = [[schema, true]];
  while (stack.length > 0) {
    const [value, root] = stack.pop() as [unknown, boolean];
    if (value === null || typeof value !== 'object') continue;
    if (Array.isArray(value)) {
      for (const item of value) stack.push([item, false]);
      continue;
    }
    const node = value as Record<string, unknown>;
    for (const keyword of REFERENCE_KEYWORDS) {
      const ref = node[keyword];
      if (typeof ref === 'string' && !ref.startsWith('#'))
        return `has ${keyword} ${JSON.stringify(ref.slice(0, 80))} outside the schema (only #… references are allowed)`;
    }
    // `#name` (draft-07's plain-name anchor) names a place and moves no base.
    if (!root && typeof node.$id === 'string' && !node.$id.startsWith('#'))
      return `has a $id below its root (${JSON.stringify(node.$id.slice(0, 80))}); only the root may carry one`;
    for (const child of Object.values(node))
      if (child !== null && typeof child === 'object') stack.push([child, false]);
  }
  return undefined;
}

const referenceProblems = new WeakMap<object, string | null>();

/** schemaReferenceProblem of a contract's two schemas, worked out once per contract object (they never change). */
export function contractReferenceProblem(contract: { inputSchema: object; outputSchema: object }): string | undefined {
  let problem = referenceProblems.get(contract);
  if (problem === undefined) {
    const input = schemaReferenceProblem(contract.inputSchema);
    const output = input === undefined ? schemaReferenceProblem(contract.outputSchema) : undefined;
    problem = input !== undefined ? `inputSchema ${input}` : output !== undefined ? `outputSchema ${output}` : null;
    referenceProblems.set(contract, problem);
  }
  return problem ?? undefined;
}
