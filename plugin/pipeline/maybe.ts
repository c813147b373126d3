/**
 * A value now, or a promise of it when something had to be waited for (a body to read, a token to verify).
 * The steps of a request nearly always have their inputs at hand (the contract resolved by an earlier step, the
 * token in the cache, no body on a GET); written with these, they run synchronously then, without the promise,
 * async frame and microtask that an async function costs on every request (~1 KB of garbage per step).
 *
 * Each helper passes up to three arguments on to its callbacks, so that a step can hand it module-level functions
 * (or functions made once per policy) with the request as an argument: a callback written inline would be a new
 * closure on every request, made even when nothing is waited for. Only the promise path makes one.
 */
export type Maybe<T> = T | Promise<T>;

/** The arguments passed on: none to three, each callback taking exactly these (checked by the overloads below). */
type Passed = [] | [unknown] | [unknown, unknown] | [unknown, unknown, unknown];

/** `f(value, a, b, c)`: at once when the value is there, once it settles when it is a promise. */
export function andThen<T, R, P extends Passed = []>(value: Maybe<T>, f: (v: T, ...args: P) => Maybe<R>, ...args: P): Maybe<R>;
export function andThen<T, R, A = void, B = void, C = void>(value: Maybe<T>, f: (v: T, a: A, b: B, c: C) => Maybe<R>, a?: A, b?: B, c?: C): Maybe<R> {
  // The arguments a caller leaves out are the ones its callbacks do not take.
  return value instanceof Promise ? value.then((v) => f(v, a as A, b as B, c as C)) : f(value, a as A, b as B, c as C);
}

/**
 * `then(work(…), …)`, or `otherwise(err, …)` when the work throws or its promise rejects (what `then` throws is not
 * caught): a fallback for work that may fail either way, as `try { then(await work()) } catch { … }` around the work only.
 */
export function attempt<T, R, P extends Passed = []>(
  work: (...args: P) => Maybe<T>,
  then: (v: T, ...args: P) => R,
  otherwise: (err: unknown, ...args: P) => R,
  ...args: P
): Maybe<R>;
export function attempt<T, R, A = void, B = void, C = void>(
  work: (a: A, b: B, c: C) => Maybe<T>,
  then: (v: T, a: A, b: B, c: C) => R,
  otherwise: (err: unknown, a: A, b: B, c: C) => R,
  a?: A,
  b?: B,
  c?: C,
): Maybe<R> {
  let value: Maybe<T>;
  try {
    value = work(a as A, b as B, c as C);
  } catch (err) {
    return otherwise(err, a as A, b as B, c as C);
  }
  if (!(value instanceof Promise)) return then(value, a as A, b as B, c as C);
  return value.then(
    (v) => then(v, a as A, b as B, c as C),
    (err: unknown) => otherwise(err, a as A, b as B, c as C),
  );
}

/** The value itself: the `then` of an attempt that only needs its fallback. */
export function same<T>(value: T): T {
  return value;
}

/** No value: the fallback of an attempt whose failure means "none". */
export function nothing(): undefined {
  return undefined;
}

/** Runs `work`, then `done` with its value; whatever either throws, and a rejection, goes to `fail`. */
export function settle<T, P extends Passed = []>(
  work: (...args: P) => Maybe<T>,
  done: (v: T, ...args: P) => void,
  fail: (err: unknown, ...args: P) => void,
  ...args: P
): void;
export function settle<T, A = void, B = void, C = void>(
  work: (a: A, b: B, c: C) => Maybe<T>,
  done: (v: T, a: A, b: B, c: C) => void,
  fail: (err: unknown, a: A, b: B, c: C) => void,
  a?: A,
  b?: B,
  c?: C,
): void {
  let value: Maybe<T>;
  try {
    value = work(a as A, b as B, c as C);
    if (!(value instanceof Promise)) {
      done(value, a as A, b as B, c as C);
      return;
    }
  } catch (err) {
    fail(err, a as A, b as B, c as C);
    return;
  }
  value.then((v) => done(v, a as A, b as B, c as C)).catch((err: unknown) => fail(err, a as A, b as B, c as C));
}
