/**
 * A value now, or a promise of it when something had to be waited for (a body to read, a token to verify).
 * The steps of a request nearly always have their inputs at hand (the contract resolved by an earlier step, the
 * token in the cache, no body on a GET); written with these, they run synchronously then, without the promise,
 * async frame and microtask that an async function costs on every request (~1 KB of garbage per step).
 */
export type Maybe<T> = T | Promise<T>;

/** `f(value)`: at once when the value is there, once it settles when it is a promise. */
export function andThen<T, R>(value: Maybe<T>, f: (v: T) => Maybe<R>): Maybe<R> {
  return value instanceof Promise ? value.then(f) : f(value);
}

/**
 * `then(work())`, or `otherwise(err)` when the work throws or its promise rejects (what `then` throws is not caught):
 * a fallback for work that may fail either way, as `try { then(await work()) } catch { … }` around the work only.
 */
export function attempt<T, R>(work: () => Maybe<T>, then: (v: T) => R, otherwise: (err: unknown) => R): Maybe<R> {
  let value: Maybe<T>;
  try {
    value = work();
  } catch (err) {
    return otherwise(err);
  }
  return value instanceof Promise ? value.then(then, otherwise) : then(value);
}

/** Runs `work`, then `done` with its value; whatever either throws, and a rejection, goes to `fail`. */
export function settle<T>(work: () => Maybe<T>, done: (v: T) => void, fail: (err: unknown) => void): void {
  let value: Maybe<T>;
  try {
    value = work();
    if (!(value instanceof Promise)) {
      done(value);
      return;
    }
  } catch (err) {
    fail(err);
    return;
  }
  value.then(done).catch(fail);
}
