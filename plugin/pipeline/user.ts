import type { Request } from 'express';
import type { MessageUser } from '../bus/transport';
import { requestContext } from '../request/context';

/** The authenticated caller, set by the authentication policy; undefined on public or unauthenticated routes. */
export function requestUser(req: Request): MessageUser | undefined {
  return requestContext(req).caller;
}

export function setRequestUser(req: Request, user: MessageUser): void {
  requestContext(req).caller = user;
}
