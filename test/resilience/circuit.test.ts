import { expect } from 'chai';
import { CircuitBreakers, type CircuitState } from '../../plugin/resilience/circuit';

function breakers(threshold = 3, openMs = 10_000) {
  let now = 1_000_000;
  const transitions: string[] = [];
  const circuits = new CircuitBreakers({
    threshold,
    openMs,
    now: () => now,
    onTransition: (service, from: CircuitState, to: CircuitState) => transitions.push(`${service}:${from}->${to}`),
  });
  return { circuits, transitions, advance: (ms: number) => (now += ms) };
}

/** Sends one request through the circuit and ends it with `outcome`; returns whether it went. */
function send(circuits: CircuitBreakers, service: string, outcome: 'success' | 'failure' | 'neutral'): boolean {
  const admission = circuits.admit(service);
  if (!admission.go) return false;
  circuits.ended(service, admission.trial, outcome);
  return true;
}

describe('circuit breaker per service', () => {
  it('opens after the threshold of consecutive failures, and refuses with the time left until its trial', () => {
    const { circuits, transitions, advance } = breakers(3, 10_000);
    for (let i = 0; i < 3; i++) expect(send(circuits, 'slow', 'failure')).to.equal(true);
    expect(circuits.state('slow')).to.equal('open');
    expect(transitions).to.deep.equal(['slow:closed->open']);
    advance(2500);
    expect(circuits.admit('slow')).to.deep.equal({ go: false, retryAfterSeconds: 8 });
    // Another service is not affected.
    expect(circuits.admit('fast')).to.deep.equal({ go: true, trial: false });
  });

  it('counts consecutive failures only: a success in between starts the count again', () => {
    const { circuits } = breakers(3);
    send(circuits, 's', 'failure');
    send(circuits, 's', 'failure');
    send(circuits, 's', 'success');
    send(circuits, 's', 'failure');
    send(circuits, 's', 'failure');
    expect(circuits.state('s')).to.equal('closed');
    send(circuits, 's', 'failure');
    expect(circuits.state('s')).to.equal('open');
  });

  it('neither opens nor closes on a neutral outcome (the bus, not the service)', () => {
    const { circuits } = breakers(2);
    for (let i = 0; i < 5; i++) send(circuits, 's', 'neutral');
    expect(circuits.state('s')).to.equal('closed');
  });

  it('lets exactly one trial through once open long enough; a success closes it', () => {
    const { circuits, transitions, advance } = breakers(1, 1000);
    send(circuits, 's', 'failure');
    advance(1000);
    const trial = circuits.admit('s');
    expect(trial).to.deep.equal({ go: true, trial: true });
    expect(circuits.state('s')).to.equal('half-open');
    // While the trial is in flight, everything else is refused.
    expect(circuits.admit('s')).to.deep.equal({ go: false, retryAfterSeconds: 1 });
    expect(circuits.admit('s').go).to.equal(false);
    circuits.ended('s', true, 'success');
    expect(circuits.state('s')).to.equal('closed');
    expect(circuits.admit('s')).to.deep.equal({ go: true, trial: false });
    expect(transitions).to.deep.equal(['s:closed->open', 's:open->half-open', 's:half-open->closed']);
  });

  it('opens again for a whole period when the trial fails', () => {
    const { circuits, transitions, advance } = breakers(1, 1000);
    send(circuits, 's', 'failure');
    advance(1000);
    expect(send(circuits, 's', 'failure')).to.equal(true);
    expect(circuits.state('s')).to.equal('open');
    expect(circuits.admit('s')).to.deep.equal({ go: false, retryAfterSeconds: 1 });
    advance(999);
    expect(circuits.admit('s').go).to.equal(false);
    advance(1);
    expect(circuits.admit('s')).to.deep.equal({ go: true, trial: true });
    expect(transitions.slice(-2)).to.deep.equal(['s:half-open->open', 's:open->half-open']);
  });

  it('after a neutral trial, the next request is the trial', () => {
    const { circuits, advance } = breakers(1, 1000);
    send(circuits, 's', 'failure');
    advance(1000);
    send(circuits, 's', 'neutral');
    expect(circuits.state('s')).to.equal('half-open');
    expect(circuits.admit('s')).to.deep.equal({ go: true, trial: true });
  });

  it('ignores what requests sent before it opened report after it did', () => {
    const { circuits, advance } = breakers(2, 1000);
    const early = circuits.admit('s');
    send(circuits, 's', 'failure');
    send(circuits, 's', 'failure');
    expect(circuits.state('s')).to.equal('open');
    // A late success of an old request does not close it; the circuit waits for its own trial.
    circuits.ended('s', early.go && early.trial, 'success');
    expect(circuits.state('s')).to.equal('open');
    advance(1000);
    const trial = circuits.admit('s');
    // An old failure arriving during the trial does not reopen it either.
    circuits.ended('s', false, 'failure');
    expect(circuits.state('s')).to.equal('half-open');
    circuits.ended('s', trial.go && trial.trial, 'success');
    expect(circuits.state('s')).to.equal('closed');
  });

  it('never opens with a threshold of 0', () => {
    const { circuits } = breakers(0);
    for (let i = 0; i < 20; i++) send(circuits, 's', 'failure');
    expect(circuits.state('s')).to.equal('closed');
  });

  it('lists the circuits that are not closed', () => {
    const { circuits, advance } = breakers(1, 5000);
    send(circuits, 'b', 'failure');
    send(circuits, 'a', 'failure');
    advance(5000);
    circuits.admit('b');
    expect(circuits.notClosed()).to.deep.equal([
      { service: 'a', state: 'open', until: 1_000_000 + 5000 },
      { service: 'b', state: 'half-open' },
    ]);
  });
});
