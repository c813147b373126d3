/** The slice of a logger we use; the host's winston logger and `console` both fit. */
export interface Logger {
  debug(message: string): void;
  info(message: string): void;
  warn(message: string): void;
  error(message: string): void;
}

export const consoleLogger: Logger = {
  debug: () => undefined,
  info: (m) => console.log(`[contracts] ${m}`),
  warn: (m) => console.warn(`[contracts] ${m}`),
  error: (m) => console.error(`[contracts] ${m}`),
};
