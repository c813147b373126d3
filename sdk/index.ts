export { serve, answer } from './serve';
export type { Operation, Handler, HandlerContext, ServeOptions, RunningService } from './serve';
export { ServiceError } from './service-error';
export { stopOnSignals, type StopOnSignalsOptions } from './stop-on-signals';
export { createTransport } from '../plugin/bus';
