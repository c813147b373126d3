import type { Request } from 'express';
import type { MessageUser } from '../bus/transport';
import { requestState } from '../request/state';

declare module '../request/state' {
  interface RequestState {
    user?: MessageUser;
  }
}

/** The authenticated caller, set by the authentication policy; undefined on public or unauthenticated routes. */
export function requestUser(req: Request): MessageUser | undefined {
  return requestState(req).user;
}

export function setRequestUser(req: Request, user: MessageUser): void {
  requestState(req).user = user;
}
