/**
 * Load shedding: how many requests each service has waiting for replies, and a bound on it. One service that stops
 * keeping up fills its own compartment only; requests to the others go on as before.
 */
export class Bulkhead {
  private readonly inFlight = new Map<string, number>();

  constructor(private readonly maxPerService: number) {}

  /** Whether one more request to `service` would go over the bound. */
  full(service: string): boolean {
    return (this.inFlight.get(service) ?? 0) >= this.maxPerService;
  }

  enter(service: string): void {
    this.inFlight.set(service, (this.inFlight.get(service) ?? 0) + 1);
  }

  leave(service: string): void {
    const left = (this.inFlight.get(service) ?? 1) - 1;
    if (left > 0) this.inFlight.set(service, left);
    else this.inFlight.delete(service);
  }

  /** Requests to `service` awaiting replies now. */
  count(service: string): number {
    return this.inFlight.get(service) ?? 0;
  }
}
