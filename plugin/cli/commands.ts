import { checkCompat } from './check-compat';
import type { Command } from './command';

/** Every subcommand, in one place: a new one is a line here and a module of its own. */
export const COMMANDS: Readonly<Record<string, Command>> = {
  'check-compat': checkCompat,
};

export function usage(): string {
  const lines = Object.values(COMMANDS).map((c) => `  contracts-gateway ${c.usage}\n      ${c.summary}\n`);
  return `usage:\n${lines.join('')}`;
}
