import type { ValidateFunction } from 'ajv';
import type { Contract, JsonSchema } from '../contracts/types';
import { compileSchema, type SchemaRole } from './ajv';
import { schemaHash } from './schema-hash';
import { errorMessage } from '../errors/describe';
import type { Logger } from '../logger';

/** A compiled schema, or why it could not be compiled (for the log only: never sent to a client). */
export type Compiled = { ok: true; validate: ValidateFunction } | { ok: false; reason: string };

export type Compiler = (schema: JsonSchema, role: SchemaRole) => ValidateFunction;

/** Compiles, never throws: a broken schema becomes `{ ok: false }` so its route can answer 500. */
function tryCompile(schema: JsonSchema, role: SchemaRole, compile: Compiler = compileSchema): Compiled {
  try {
    return { ok: true, validate: compile(schema, role) };
  } catch (err) {
    return { ok: false, reason: errorMessage(err) };
  }
}

/** How long one slice of compiling in the background may hold the event loop before requests get a turn. */
const SLICE_MS = 10;

/**
 * Validators of the discovered contracts, compiled once per schema content and role: contracts (of any message
 * type, any instance) with the same schema share one validator; a changed schema is compiled anew, an unchanged
 * one never is. `sync` is meant for the registry's 'change' event, so a broken schema is reported when the contract
 * is discovered rather than on its first request; `syncInSlices` does the compiling in slices between requests, so
 * a flood of changing contracts never holds the event loop for long (a request compiles what it needs first).
 */
export class ValidatorCache {
  /** `role:schema hash` → its validator. */
  private readonly entries = new Map<string, Compiled>();
  private readonly byContract = new WeakMap<Contract, Partial<Record<SchemaRole, Compiled>>>();
  private readonly compile: Compiler;
  private readonly log?: Pick<Logger, 'error'>;
  /** Contracts of the last syncInSlices still to compile, and the timer of the next slice. */
  private queue: Array<[Contract, SchemaRole]> = [];
  private slice: NodeJS.Immediate | undefined;

  constructor(opts: { compile?: Compiler; log?: Pick<Logger, 'error'> } = {}) {
    this.compile = opts.compile ?? compileSchema;
    this.log = opts.log;
  }

  /** Brings the cache in line with the current contracts: compiles new and changed ones, forgets the gone. */
  sync(contracts: readonly Contract[]): void {
    for (const [contract, role] of this.forget(contracts)) this.validator(contract, role);
  }

  /** As sync, compiling in slices of at most about SLICE_MS between other work; a newer call replaces what is left. */
  syncInSlices(contracts: readonly Contract[]): void {
    this.queue = this.forget(contracts);
    const work = (): void => {
      this.slice = undefined;
      const until = performance.now() + SLICE_MS;
      while (this.queue.length > 0 && performance.now() < until) {
        const [contract, role] = this.queue.pop() as [Contract, SchemaRole];
        this.lookup(contract, role);
      }
      if (this.queue.length > 0) this.slice = setImmediate(work);
    };
    if (!this.slice && this.queue.length > 0) this.slice = setImmediate(work);
  }

  /** Stops compiling in the background. */
  stop(): void {
    if (this.slice) clearImmediate(this.slice);
    this.slice = undefined;
    this.queue = [];
  }

  /** Drops the validators no current contract uses; returns each contract and role still to look up. */
  private forget(contracts: readonly Contract[]): Array<[Contract, SchemaRole]> {
    const live = new Set<string>();
    const todo: Array<[Contract, SchemaRole]> = [];
    for (const contract of contracts) {
      for (const role of ['input', 'output'] as const) {
        const key = keyOf(role, schemaHash(role === 'input' ? contract.inputSchema : contract.outputSchema));
        live.add(key);
        if (!this.entries.has(key)) todo.push([contract, role]);
      }
    }
    for (const key of this.entries.keys()) if (!live.has(key)) this.entries.delete(key);
    return todo;
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
    const key = keyOf(role, schemaHash(schema));
    const known = this.entries.get(key);
    if (known) return known;
    const compiled = tryCompile(schema, role, this.compile);
    if (!compiled.ok) {
      this.log?.error(
        `contract ${contract.messageType}: its ${role}Schema does not compile (${compiled.reason}); its routes answer 500 INTERNAL_ERROR until the service announces a fixed contract`,
      );
    }
    this.entries.set(key, compiled);
    return compiled;
  }

  get size(): number {
    return this.entries.size;
  }
}

function keyOf(role: SchemaRole, hash: string): string {
  return `${role}:${hash}`;
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
