export { serve, answer } from './serve';
export type { Operation, Handler, HandlerContext, ServeOptions, RunningService } from './serve';
export { ServiceError } from './service-error';
export { createTransport } from '../plugin/bus';
