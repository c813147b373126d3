/**
 * The plugin's one logger shape: the host's winston logger and `console` both fit. A part that logs at one level
 * only takes `Pick<Logger, 'warn'>`, so a test can hand it just that.
 */
export interface Logger {
  debug(message: string): void;
  info(message: string): void;
  warn(message: string): void;
  error(message: string): void;
}

/** Does nothing: a listener or catch handler whose event needs no action. */
export const noop = (): void => undefined;

export const silentLogger: Logger = { debug: noop, info: noop, warn: noop, error: noop };

/** For what is made without a logger (a runtime outside the host, a service's bus transport): lines to the console. */
export const consoleLogger: Logger = {
  debug: noop,
  info: (m) => console.log(`[contracts] ${m}`),
  warn: (m) => console.warn(`[contracts] ${m}`),
  error: (m) => console.error(`[contracts] ${m}`),
};
