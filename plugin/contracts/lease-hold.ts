/**
 * When leases may not run out (the registry's expiry asks before each check): while the gateway cannot hear
 * renewals (its bus not up, or its announcement listener refused by the broker, e.g. a vhost's queue limit filled by
 * another user), and while `graceMs()` says the services are still being heard again. The first check that finds the
 * gateway hearing after a deaf spell calls `heardAgain` (give every instance a whole lease): renewals sent meanwhile
 * were lost.
 */
export function leaseHold(hearing: () => boolean, graceMs: () => number, heardAgain: () => void): () => boolean {
  let deaf = false;
  return () => {
    if (!hearing()) {
      deaf = true;
      return true;
    }
    if (deaf) {
      deaf = false;
      heardAgain();
    }
    return graceMs() > 0;
  };
}
