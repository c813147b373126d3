/** Where a service's circuit is: `closed` (requests go), `open` (refused), `half-open` (one trial request goes). */
export type CircuitState = 'closed' | 'open' | 'half-open';

/** What a request to a service may do: go, go as the half-open trial, or be refused for this many seconds. */
export type Admission = { go: true; trial: boolean } | { go: false; retryAfterSeconds: number };

/** How a request that went ended, as the circuit counts it. */
export type CircuitOutcome = 'success' | 'failure' | 'neutral';

interface Circuit {
  state: CircuitState;
  /** Consecutive failures while closed. */
  failures: number;
  /** While open: when the trial may go (ms since the epoch). */
  until: number;
  /** While half-open: the trial is in flight. */
  trialInFlight: boolean;
}

export interface CircuitOptions {
  /** Consecutive failures that open a circuit; 0: never. */
  threshold: number;
  /** How long an open circuit refuses before its trial. */
  openMs: number;
  now?: () => number;
  /** Every change of a service's state (the guard logs it once and counts it). */
  onTransition?: (service: string, from: CircuitState, to: CircuitState) => void;
}

/**
 * A circuit breaker per service. `threshold` consecutive failures open it; for `openMs` every request is refused;
 * then exactly one request goes as a trial (half-open) while the others are still refused: a success closes the
 * circuit, a failure opens it again. Outcomes of requests sent before the circuit opened are not counted again,
 * and a neutral outcome (the bus, not the service) neither opens nor closes anything.
 */
export class CircuitBreakers {
  private readonly circuits = new Map<string, Circuit>();
  private readonly now: () => number;

  constructor(private readonly options: CircuitOptions) {
    this.now = options.now ?? Date.now;
  }

  admit(service: string): Admission {
    const circuit = this.circuits.get(service);
    if (!circuit || circuit.state === 'closed') return { go: true, trial: false };
    const now = this.now();
    if (circuit.state === 'open' && now >= circuit.until) {
      this.move(service, circuit, 'half-open');
      circuit.trialInFlight = true;
      return { go: true, trial: true };
    }
    if (circuit.state === 'half-open' && !circuit.trialInFlight) {
      circuit.trialInFlight = true;
      return { go: true, trial: true };
    }
    // Half-open with its trial in flight: its answer is due soon, so is the circuit's fate.
    const waitMs = circuit.state === 'open' ? circuit.until - now : 0;
    return { go: false, retryAfterSeconds: Math.max(1, Math.ceil(waitMs / 1000)) };
  }

  /** How a request admitted with `trial` ended. */
  ended(service: string, trial: boolean, outcome: CircuitOutcome): void {
    const circuit = this.circuits.get(service);
    if (trial) {
      if (circuit?.state !== 'half-open') return;
      circuit.trialInFlight = false;
      if (outcome === 'success') this.close(service, circuit);
      else if (outcome === 'failure') this.open(service, circuit);
      // neutral: the next request is the trial
      return;
    }
    if (circuit !== undefined && circuit.state !== 'closed') return; // sent before it opened
    if (outcome === 'success') {
      if (circuit) this.circuits.delete(service);
      return;
    }
    if (outcome !== 'failure' || this.options.threshold === 0) return;
    const counted = circuit ?? { state: 'closed', failures: 0, until: 0, trialInFlight: false };
    counted.failures += 1;
    this.circuits.set(service, counted);
    if (counted.failures >= this.options.threshold) this.open(service, counted);
  }

  /** Circuits not closed now, by service, with when an open one lets its trial go. */
  notClosed(): Array<{ service: string; state: CircuitState; until?: number }> {
    const list: Array<{ service: string; state: CircuitState; until?: number }> = [];
    for (const [service, c] of this.circuits) {
      if (c.state === 'open') list.push({ service, state: c.state, until: c.until });
      else if (c.state === 'half-open') list.push({ service, state: c.state });
    }
    return list.sort((a, b) => (a.service < b.service ? -1 : a.service > b.service ? 1 : 0));
  }

  state(service: string): CircuitState {
    return this.circuits.get(service)?.state ?? 'closed';
  }

  private open(service: string, circuit: Circuit): void {
    circuit.until = this.now() + this.options.openMs;
    circuit.failures = 0;
    this.move(service, circuit, 'open');
  }

  private close(service: string, circuit: Circuit): void {
    this.move(service, circuit, 'closed');
    this.circuits.delete(service);
  }

  private move(service: string, circuit: Circuit, to: CircuitState): void {
    const from = circuit.state;
    circuit.state = to;
    if (from !== to) this.options.onTransition?.(service, from, to);
  }
}
