/** What a caught value says, for a log line: an Error's message, or the value as text. */
export function errorMessage(err: unknown): string {
  return err instanceof Error ? err.message : String(err);
}

/** As errorMessage, with the Error's name first (`TypeError: …`), where the kind of failure matters. */
export function describeError(err: unknown): string {
  return err instanceof Error ? `${err.name}: ${err.message}` : String(err);
}
