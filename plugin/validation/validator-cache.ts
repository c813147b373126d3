import type { ValidateFunction } from 'ajv';
import type { Contract, JsonSchema } from '../contracts/types';
import { compileSchema, type SchemaRole } from './ajv';
import { schemaHash } from './schema-hash';
import { errorMessage } from '../errors';

/** A compiled schema, or why it could not be compiled (for the log only: never sent to a client). */
export type Compiled = { ok: true; validate: ValidateFunction } | { ok: false; reason: string };

export type Compiler = (schema: JsonSchema, role: SchemaRole) => ValidateFunction;

interface Entry {
  hash: string;
  compiled: Compiled;
}

export interface CacheLogger {
  error(message: string): void;
}

/** Compiles, never throws: a broken schema becomes `{ ok: false }` so its route can answer 500. */
export function tryCompile(schema: JsonSchema, role: SchemaRole, compile: Compiler = compileSchema): Compiled {
  try {
    return { ok: true, validate: compile(schema, role) };
  } catch (err) {
    return { ok: false, reason: errorMessage(err) };
  }
}

/**
 * Validators of the discovered contracts, compiled once per contract and role. Entries are keyed by
 * message type and carry the hash of the schema they were compiled from: a changed contract is recompiled,
 * an unchanged one never is. `sync` is meant for the registry's 'change' event, so a broken schema is
 * reported when the contract is discovered rather than on its first request.
 */
export class ValidatorCache {
  private readonly entries = new Map<string, Entry>();
  private readonly byContract = new WeakMap<Contract, Partial<Record<SchemaRole, Compiled>>>();
  private readonly compile: Compiler;
  private readonly log?: CacheLogger;

  constructor(opts: { compile?: Compiler; log?: CacheLogger } = {}) {
    this.compile = opts.compile ?? compileSchema;
    this.log = opts.log;
  }

  /** Brings the cache in line with the current contracts: compiles new and changed ones, forgets the gone. */
  sync(contracts: readonly Contract[]): void {
    const live = new Set<string>();
    for (const contract of contracts) {
      for (const role of ['input', 'output'] as const) {
        live.add(keyOf(contract.messageType, role));
        this.validator(contract, role);
      }
    }
    for (const key of this.entries.keys()) if (!live.has(key)) this.entries.delete(key);
  }

  /** The validator of a contract's input or output schema; compiled here only if sync has not seen it. */
  validator(contract: Contract, role: SchemaRole): Compiled {
    // The registry's contracts are frozen and replaced, never changed: a contract object asked before has its answer.
    if (!Object.isFrozen(contract)) return this.lookup(contract, role);
    let byRole = this.byContract.get(contract);
    if (!byRole) this.byContract.set(contract, (byRole = {}));
    return (byRole[role] ??= this.lookup(contract, role));
  }

  private lookup(contract: Contract, role: SchemaRole): Compiled {
    const schema = role === 'input' ? contract.inputSchema : contract.outputSchema;
    const key = keyOf(contract.messageType, role);
    const hash = schemaHash(schema);
    const known = this.entries.get(key);
    if (known?.hash === hash) return known.compiled;
    const compiled = tryCompile(schema, role, this.compile);
    if (!compiled.ok) {
      this.log?.error(`contract ${contract.messageType}: its ${role}Schema does not compile (${compiled.reason}); its routes answer 500 INTERNAL_ERROR until the service announces a fixed contract`);
    }
    this.entries.set(key, { hash, compiled });
    return compiled;
  }

  get size(): number {
    return this.entries.size;
  }
}

function keyOf(messageType: string, role: SchemaRole): string {
  return `${role}:${messageType}`;
}

const INLINE_LIMIT = 256;
const inline = new Map<string, Compiled>();

/**
 * An inline schema of a hand-written pipeline. The host calls policy factories again on every reload of
 * gateway.config.yml (each discovery change is one), so compiled schemas are kept by content hash.
 */
export function compileInline(schema: JsonSchema, compile: Compiler = compileSchema): Compiled {
  const hash = schemaHash(schema);
  const known = inline.get(hash);
  if (known) return known;
  const compiled = tryCompile(schema, 'input', compile);
  if (inline.size >= INLINE_LIMIT) inline.delete(inline.keys().next().value as string);
  inline.set(hash, compiled);
  return compiled;
}
