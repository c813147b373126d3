/** A prom-client metric with labels: `labels(...values)` gives the child that counts for those values. */
interface Labelled<Child> {
  labels(...values: string[]): Child;
}

type ChildOf<M> = M extends { labels(...values: string[]): infer C } ? C : never;

/**
 * The children of one metric by their label values, made once per label set: prom-client's `labels()` hashes its
 * arguments into a key on every call; here the request path does one Map lookup of a joined key.
 * The label values must already be bounded (route templates, codes, services): this never forgets a child.
 */
export class LabelChildren<M extends Labelled<unknown>> {
  private readonly children = new Map<string, ChildOf<M>>();
  constructor(private readonly metric: M) {}

  get1(a: string): ChildOf<M> {
    let child = this.children.get(a);
    if (child === undefined) this.children.set(a, (child = this.metric.labels(a) as ChildOf<M>));
    return child;
  }

  get2(a: string, b: string): ChildOf<M> {
    const key = `${a}\u0000${b}`;
    let child = this.children.get(key);
    if (child === undefined) this.children.set(key, (child = this.metric.labels(a, b) as ChildOf<M>));
    return child;
  }

  get3(a: string, b: string, c: string): ChildOf<M> {
    const key = `${a}\u0000${b}\u0000${c}`;
    let child = this.children.get(key);
    if (child === undefined) this.children.set(key, (child = this.metric.labels(a, b, c) as ChildOf<M>));
    return child;
  }
}
