import type { Contract } from '../../plugin/contracts/types';
import type { Logger } from '../../plugin/logger';
import type { ReplyWarnings } from '../../plugin/contracts/reply-warnings';

/** Where a reply problem is reported: the runtime's log and its memory of what was reported already. */
interface ReplyReport {
  readonly log: Logger;
  readonly replyWarnings: ReplyWarnings;
}

/** Characters of a path we pass on as Location; anything else (a scheme, a host, a query) is not ours to send. */
const API_PATH = /^\/api\/[A-Za-z0-9/._~%-]*$/;
/** `.` and `..`, also percent-encoded: a browser resolves `%2e%2e` as `..` (WHATWG URL). */
const DOT_SEGMENT = /^(?:\.|%2e){1,2}$/i;

/**
 * A service may only point at our own API: a normalised path under /api/ (no `.`/`..` segments, no `//`), so a
 * Location like `/api/../../evil` never leaves the gateway.
 */
export function isSafeLocation(location: string): boolean {
  if (!API_PATH.test(location)) return false;
  const segments = location.split('/');
  for (let i = 1; i < segments.length; i += 1) {
    const s = segments[i];
    if ((s === '' && i < segments.length - 1) || DOT_SEGMENT.test(s)) return false;
  }
  return true;
}

/** Logs `message` the first time `kind` is seen for this contract (a re-announced contract is a new one). */
function warnOncePerContract(report: ReplyReport, kind: string, contract: Contract, message: string): void {
  if (report.replyWarnings.first(kind, contract)) report.log.warn(`${message} (logged once per contract)`);
}

/** The reply's Location if it is safe to send; otherwise undefined, reported once per contract. */
export function replyLocation(location: unknown, contract: Contract, report: ReplyReport): string | undefined {
  if (location === undefined || location === null || location === '') return undefined;
  if (typeof location === 'string' && isSafeLocation(location)) return location;
  const shown = JSON.stringify(typeof location === 'string' ? location.slice(0, 200) : location)?.slice(0, 200);
  warnOncePerContract(
    report,
    'location',
    contract,
    `${contract.targetService} answered ${contract.messageType} with a location outside /api/ or not normalised (${shown}): not sent`,
  );
  return undefined;
}

/** The reply's status if it is a success status; otherwise undefined (the derived one is used), reported once per contract. */
export function replyStatus(status: unknown, contract: Contract, report: ReplyReport): number | undefined {
  if (status === undefined || status === null) return undefined;
  if (typeof status === 'number' && Number.isInteger(status) && status >= 200 && status < 300) return status;
  warnOncePerContract(
    report,
    'status',
    contract,
    `${contract.targetService} answered ${contract.messageType} with status ${JSON.stringify(status)?.slice(0, 50)}, which is not a success status: the route's own status was sent`,
  );
  return undefined;
}
