import type { Request } from 'express';
import type { MessageUser } from '../bus/transport';

const KEY = Symbol.for('express-gateway-plugin-contracts.user');

/** The authenticated caller, set by the authentication policy; undefined on public or unauthenticated routes. */
export function requestUser(req: Request): MessageUser | undefined {
  return (req as unknown as Record<symbol, MessageUser | undefined>)[KEY];
}

export function setRequestUser(req: Request, user: MessageUser): void {
  (req as unknown as Record<symbol, MessageUser | undefined>)[KEY] = user;
}
