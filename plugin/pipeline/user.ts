import type { Request } from 'express';
import type { MessageUser } from '../bus/transport';
import { requestState } from '../request/state';

/** The authenticated caller, set by the authentication policy; undefined on public or unauthenticated routes. */
export function requestUser(req: Request): MessageUser | undefined {
  return requestState(req).user as MessageUser | undefined;
}

export function setRequestUser(req: Request, user: MessageUser): void {
  requestState(req).user = user;
}
