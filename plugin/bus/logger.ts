/** The slice of a logger the transports use (the plugin's Logger and `console` both fit). */
export interface BusLogger {
  info(message: string): void;
  warn(message: string): void;
  error(message: string): void;
}

/** Does nothing: a listener or catch handler whose event needs no action. */
export const noop = (): void => undefined;

export const silentLogger: BusLogger = { info: noop, warn: noop, error: noop };

/** Warnings and errors to the console: for a transport made without a logger, where a lost broker must still show. */
export const consoleLogger: BusLogger = {
  info: noop,
  warn: (m) => console.warn(m),
  error: (m) => console.error(m),
};
