'use strict';
/**
 * Preloaded (`--require`) into the processes that run the reference users service in the benchmark: (b)'s and its
 * variants' dist/scripts/users-service.js, (a)'s gateway. The service stays itself (handlers, SDK, embedded database),
 * except that a user once read is answered from memory until the next write. The report sets these configurations
 * beside floors whose service answers a constant: without this, each request's database read (PGlite, in
 * WebAssembly, on the cores the gateway needs) would be measured, not the gateway.
 * Env: BENCH_ROOT, the checkout whose dist/ runs (another commit's with --before).
 */
const path = require('node:path');

const ROOT = path.resolve(process.env.BENCH_ROOT);
const { UserStore } = require(path.join(ROOT, 'dist', 'examples', 'users-service', 'store'));

const caches = new WeakMap();
const cacheOf = (store) => caches.get(store) ?? caches.set(store, new Map()).get(store);

const get = UserStore.prototype.get;
UserStore.prototype.get = async function (userId, client) {
  // Reads inside a transaction see its own changes: never cached.
  if (client !== undefined && client !== this.db) return get.call(this, userId, client);
  const cache = cacheOf(this);
  if (cache.has(userId)) return cache.get(userId);
  const user = await get.call(this, userId);
  if (user) cache.set(userId, user);
  return user;
};
for (const name of ['insert', 'update', 'delete', 'grant', 'linkExternal']) {
  const write = UserStore.prototype[name];
  UserStore.prototype[name] = function (...args) {
    cacheOf(this).clear();
    return Promise.resolve(write.apply(this, args)).finally(() => cacheOf(this).clear());
  };
}
