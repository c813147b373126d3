import type { Reply, ReplyError } from '../plugin/bus/transport';

/** Thrown by a handler to answer with one of the gateway's error codes (NOT_FOUND, RESOURCE_CONFLICT, …). */
export class ServiceError extends Error {
  readonly code: string;
  readonly fields: Omit<ReplyError, 'code' | 'message'>;

  constructor(code: string, message: string, fields: Omit<ReplyError, 'code' | 'message'> = {}) {
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
