import { namesContract } from '../pipeline/resolve-contract';
import type { RouteAction } from '../routing/route-action';
import { isRecord } from '../is-record';
import { POLICY_NAMES } from '../policy-names';

/**
 * Express Gateway 1.16 hands a policy its action as `Object.assign({}, step.action, ActionParams.prototype)`
 * (lib/gateway/pipelines.js), which copies the one enumerable method of that prototype onto every action.
 */
const HOST_ACTION_KEYS: readonly string[] = ['getCommonAuthCallback'];
/** A condition gets its whole entry of the YAML, its `name` included (lib/conditions/index.js). */
const HOST_CONDITION_KEYS: readonly string[] = ['name'];
/** What a pipeline step may hold besides the policy's action (lib/gateway/pipelines.js reads only these). */
const STEP_KEYS = ['action', 'condition'];

/** What the check needs of a policy or condition: its name and the keys its schema declares. */
export interface Declared {
  name: string;
  schema: { properties?: Record<string, unknown> };
}

type Entry = Record<string, unknown>;

/**
 * The first key of `given` that neither the schema declares nor the host adds, described in one line with the
 * closest known key; undefined when every key is known. The schemas cannot say this themselves: they may not use
 * `additionalProperties: false`, because the host adds keys of its own.
 */
export function unknownKey(
  declared: Declared,
  given: unknown,
  hostKeys: readonly string[] = HOST_ACTION_KEYS,
): string | undefined {
  if (!isRecord(given)) return undefined;
  const known = Object.keys(declared.schema.properties ?? {});
  for (const key of Object.keys(given)) {
    if (known.includes(key) || hostKeys.includes(key)) continue;
    return `unknown key "${key}" ${hint(key, known, declared.name)}`;
  }
  return undefined;
}

/**
 * The first mistake in the pipelines of a gateway config that would let a request through unchecked, as one line
 * naming the pipeline and the step; undefined when there is none. Looks at the steps of `policies` and the
 * conditions in `conditions` (the plugin's own); the host's steps are the host's to check.
 * - an action or condition key that the policy does not know (`requried`): the setting would silently not apply;
 * - a step key other than `action` and `condition` (`actoin`): the whole action would silently not apply;
 * - a `permission` step with neither `required`, `public: true` nor a contract (named by the step, or by the route
 *   of every endpoint of the pipeline: generated ones carry `contract:`, or a `route-table` step before it): it
 *   would check nothing but that there is a caller.
 */
export function pipelineProblem(
  gatewayConfig: unknown,
  policies: readonly Declared[],
  conditions: readonly Declared[],
): string | undefined {
  if (!isRecord(gatewayConfig) || !isRecord(gatewayConfig.pipelines)) return undefined;
  const endpoints = isRecord(gatewayConfig.apiEndpoints) ? gatewayConfig.apiEndpoints : {};
  for (const [name, pipeline] of Object.entries(gatewayConfig.pipelines)) {
    if (!isRecord(pipeline)) continue;
    const problem = pipelineStepsProblem(pipeline, endpoints, policies, conditions);
    if (problem) return `pipeline "${name}", ${problem}`;
  }
  return undefined;
}

function pipelineStepsProblem(
  pipeline: Entry,
  endpoints: Entry,
  policies: readonly Declared[],
  conditions: readonly Declared[],
): string | undefined {
  const entries = listOf(pipeline.policies ?? pipeline.policy);
  let routed = routedByEndpoints(listOf(pipeline.apiEndpoints ?? pipeline.apiEndpoint), endpoints);
  for (const entry of entries) {
    if (!isRecord(entry)) continue;
    const policyName = Object.keys(entry)[0];
    if (policyName === POLICY_NAMES.routeTable) routed = true;
    const declared = policies.find((p) => p.name === policyName);
    // `- permission:` with no step runs it once with an empty action, as the host does.
    const steps = listOf(entry[policyName]);
    for (const step of steps.length ? steps : [{}]) {
      if (!isRecord(step)) continue;
      const problem =
        stepProblem(step, declared, conditions) ??
        (policyName === POLICY_NAMES.permission && !routed ? unboundPermission(step) : undefined);
      if (problem) return `step ${policyName}: ${problem}`;
    }
  }
  return undefined;
}

function stepProblem(step: Entry, declared: Declared | undefined, conditions: readonly Declared[]): string | undefined {
  const condition = conditionProblem(step.condition, conditions);
  if (condition) return condition;
  if (!declared) return undefined;
  const stepKey = Object.keys(step).find((k) => !STEP_KEYS.includes(k));
  if (stepKey !== undefined) return `unknown key "${stepKey}" in the step ${hint(stepKey, STEP_KEYS, 'a step')}`;
  return unknownKey(declared, step.action, []);
}

function unboundPermission(step: Entry): string | undefined {
  const action = isRecord(step.action) ? step.action : {};
  if (Array.isArray(action.required) || action.public === true || namesContract(action as RouteAction))
    return undefined;
  return 'its action has neither `required`, `public: true` nor a `messageType`, and its route serves no contract, so it would check nothing';
}

/** The plugin's conditions anywhere in a step's condition, nested in the host's not/allOf/oneOf too. */
function conditionProblem(condition: unknown, conditions: readonly Declared[]): string | undefined {
  if (!isRecord(condition)) return undefined;
  const declared = conditions.find((c) => c.name === condition.name);
  if (declared) {
    const problem = unknownKey(declared, condition, HOST_CONDITION_KEYS);
    return problem && `condition ${declared.name}: ${problem}`;
  }
  for (const inner of [condition.condition, ...listOf(condition.conditions)]) {
    const problem = conditionProblem(inner, conditions);
    if (problem) return problem;
  }
  return undefined;
}

/** True when every endpoint of the pipeline carries the route of a generated contract endpoint (`contract:`). */
function routedByEndpoints(names: unknown[], endpoints: Entry): boolean {
  const entries = names.flatMap((n) => (typeof n === 'string' ? listOf(endpoints[n]) : [undefined]));
  return (
    entries.length > 0 &&
    entries.every((e) => isRecord(e) && isRecord(e.contract) && namesContract(e.contract as RouteAction))
  );
}

/** "(did you mean …?)" with the closest known key, else what the keys are. */
function hint(key: string, known: readonly string[], owner: string): string {
  const closest = closestKey(key, known);
  if (closest !== undefined) return `(did you mean "${closest}"?)`;
  return known.length ? `(${owner} takes ${known.join(', ')})` : `(${owner} takes no settings)`;
}

/** The known key nearest to `key` (edits, a swap of neighbours counting as one), if it is near enough to be a slip. */
export function closestKey(key: string, known: readonly string[]): string | undefined {
  let best: string | undefined;
  let bestDistance = Infinity;
  for (const candidate of known) {
    const d = distance(key.toLowerCase(), candidate.toLowerCase());
    if (d < bestDistance) [best, bestDistance] = [candidate, d];
  }
  return bestDistance <= Math.max(2, Math.floor(key.length / 3)) ? best : undefined;
}

/** Optimal string alignment distance: insertions, deletions, substitutions and adjacent swaps. */
function distance(a: string, b: string): number {
  const d: number[][] = Array.from({ length: a.length + 1 }, (_, i) => [i, ...new Array<number>(b.length).fill(0)]);
  for (let j = 1; j <= b.length; j += 1) d[0][j] = j;
  for (let i = 1; i <= a.length; i += 1) {
    for (let j = 1; j <= b.length; j += 1) {
      const cost = a[i - 1] === b[j - 1] ? 0 : 1;
      d[i][j] = Math.min(d[i - 1][j] + 1, d[i][j - 1] + 1, d[i - 1][j - 1] + cost);
      if (i > 1 && j > 1 && a[i - 1] === b[j - 2] && a[i - 2] === b[j - 1])
        d[i][j] = Math.min(d[i][j], d[i - 2][j - 2] + 1);
    }
  }
  return d[a.length][b.length];
}

/** The host accepts one item or a list wherever a list is meant (and null for an empty one). */
export function listOf(v: unknown): unknown[] {
  if (v === undefined || v === null) return [];
  return Array.isArray(v) ? v : [v];
}

/** A policy as the plugin registers it: the factory the host calls with each step's action. */
export interface GuardedPolicy extends Declared {
  policy: (action: never, ...rest: never[]) => unknown;
}

/**
 * The policy with its factory refusing (throwing) while `refusal()` names a mistake in the config being loaded, and
 * for an action with a key it does not know. The host then keeps the routes it had (a reload) or does not start:
 * a step it cannot trust never serves a request.
 */
export function guardedPolicy<P extends GuardedPolicy>(policy: P, refusal: () => string | undefined): P {
  const make = policy.policy as (action: unknown, ...rest: unknown[]) => unknown;
  const guarded = (action: unknown, ...rest: unknown[]): unknown => {
    const problem = refusal() ?? unknownKey(policy, action);
    if (problem) throw new Error(`${policy.name}: ${problem}`);
    return make(action, ...rest);
  };
  return { ...policy, policy: guarded };
}

/** A condition as the plugin registers it: the host calls `handler(config)` once per step (one parameter). */
export interface GuardedCondition extends Declared {
  handler: (config: never) => unknown;
}

/** The condition refusing as guardedPolicy's policies do; its config carries the host's `name` too. */
export function guardedCondition<C extends GuardedCondition>(condition: C, refusal: () => string | undefined): C {
  const make = condition.handler as (config: unknown) => unknown;
  const guarded = (config: unknown): unknown => {
    const problem = refusal() ?? unknownKey(condition, config, HOST_CONDITION_KEYS);
    if (problem) throw new Error(`${condition.name}: ${problem}`);
    return make(config);
  };
  return { ...condition, handler: guarded };
}
