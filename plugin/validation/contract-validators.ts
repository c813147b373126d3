import type { Runtime } from '../runtime';
import { ValidatorCache } from './validator-cache';

const caches = new WeakMap<Runtime, ValidatorCache>();

/**
 * The process's validator cache, bound to the runtime's registry on first use: it compiles every contract
 * known now and then each change as it is discovered. Idempotent (the host re-runs init() on every reload).
 */
export function contractValidators(runtime: Runtime): ValidatorCache {
  let cache = caches.get(runtime);
  if (!cache) {
    const created = new ValidatorCache({ log: runtime.log });
    caches.set(runtime, created);
    created.sync(runtime.registry.contracts());
    runtime.registry.on('change', (contracts) => created.sync(contracts));
    cache = created;
  }
  return cache;
}
