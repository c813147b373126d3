/**
 * Issue 37 item 6, a bench-only prototype (not shipped): `contract-endpoint`, one host step that runs the steps of
 * the plugin's policies in order through one runner, as a generated pipeline of one plugin step would.
 *
 * The steps are the policies' own: each policy builds its middleware as `runner([step])` (plugin/lifecycle/runner.ts),
 * and the compiled policies read `runner` off that module's exports when called, so while the factories are called
 * here `runner` hands back the step itself, and one `runner(steps)` is made of them. Nothing in plugin/ or policies/
 * knows of this.
 *
 * oneStep(dist, policies, action): `policies` are the policy objects ({ policy(action) }) in pipeline order; a policy
 * that is not a runner (request-trace) is dropped, since the runner sets the trace ids itself as it enters the context.
 */
'use strict';
const { join } = require('node:path');

function stepsOf(dist, policies, action) {
  const runnerModule = require(join(dist, 'plugin', 'lifecycle', 'runner.js'));
  const real = runnerModule.runner;
  const steps = [];
  runnerModule.runner = (given) => {
    steps.push(...given);
    return undefined;
  };
  try {
    for (const p of policies) p.policy({ ...action });
  } finally {
    runnerModule.runner = real;
  }
  return steps;
}

function oneStep(dist, policies, action = {}) {
  const { runner } = require(join(dist, 'plugin', 'lifecycle', 'runner.js'));
  return runner(stepsOf(dist, policies, action));
}

module.exports = { oneStep };
