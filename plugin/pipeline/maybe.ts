/**
 * A value now, or a promise of it when something had to be waited for (a body to read, a token to verify): what a
 * helper returns when it is a plain function that takes an async path only when it has to. Whoever needs the value
 * awaits it on its own slow path; the fast path of a request is taken in plugin/lifecycle/runner.ts.
 */
export type Maybe<T> = T | Promise<T>;
