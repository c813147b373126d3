import { asksForHelp } from '../plugin/cli/command';

/**
 * `--help` / `-h` on a script run as `node dist/scripts/<name>.js`: prints `text` on stdout and exits 0 before the
 * script reads anything, as every installed command does. The scripts take their settings from the environment.
 */
export function helpIfAsked(text: string, args: readonly string[] = process.argv.slice(2)): void {
  if (!asksForHelp(args)) return;
  process.stdout.write(`${text.trim()}\n`);
  process.exit(0);
}

/** The one-service scripts' common settings, as docs/configuration.md lists them. */
export const ONE_SERVICE_SETTINGS = `Settings (environment; docs/configuration.md):
  BUS_URL            amqp:// URL of RabbitMQ, best with a broker user of the process's own (required)
  BUS_PREFIX         exchange and queue prefix (default contracts)
  BUS_GATEWAY_USER   the gateway's broker user, the only one requests are taken from
                     (default gateway; guest while BUS_URL's user is guest)
  DATABASE_URL       PostgreSQL shared by the users and auth services; unset: the embedded database in DATA_DIR
  DATA_DIR           the embedded database's folder (default .gateway/data)
SIGTERM or SIGINT withdraws its contracts, finishes the requests in flight and exits.`;
