/** Graceful stop of the gateway process: drain the host's servers, answer what is left 503, close the bus. */
export { GracefulStop, attachGracefulStop, DEFAULT_SHUTDOWN_GRACE_MS } from './graceful-stop';
export { HttpDrain, SHUTDOWN_RETRY_AFTER_S, shuttingDown } from './http-drain';
