import type { Reply, ReplyError } from '../plugin/bus/transport';
import type { ErrorCode } from '../plugin/errors/codes';

/**
 * Thrown by a handler to answer with one of the gateway's error codes (NOT_FOUND, RESOURCE_CONFLICT, …). The code is
 * closed: the gateway answers any code outside its table with a 500, so an open code could only be a latent bug.
 */
export class ServiceError extends Error {
  readonly code: ErrorCode;
  readonly fields: Omit<ReplyError, 'code' | 'message'>;

  constructor(code: ErrorCode, message: string, fields: Omit<ReplyError, 'code' | 'message'> = {}) {
    super(message);
    this.name = 'ServiceError';
    this.code = code;
    this.fields = fields;
  }

  toReplyError(): ReplyError {
    return { ...this.fields, code: this.code, message: this.message };
  }

  toReply(): Reply {
    return { ok: false, error: this.toReplyError() };
  }
}
