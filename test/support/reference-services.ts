import { expect } from 'chai';
import { UserStore } from '../../examples/users-service/store';
import { openDatabase } from '../../examples/storage';
import type { Database } from '../../examples/storage/database';
import { startUsersService } from '../../examples/users-service';
import { startAuthService } from '../../examples/auth-service';
import { AmqpTransport } from '../../plugin/bus/amqp';
import { silentLogger, type Logger } from '../../plugin/logger';
import type { RunningService } from '../../sdk';
import type { BrokerUsers } from './broker-users';
import { createTestDatabase, type TestDatabase } from './databases';
import { eventually } from './gateway-process';
import { http, httpAs } from './http';
import { TEST_JWT_SECRET } from './tokens';

const quiet: Logger = silentLogger;
const creator = httpAs(['admin:all', 'users:create']);

export interface ReferenceServicesOptions {
  /** Names the database (createTestDatabase's label). */
  label: string;
  /** The administrator made through the gateway, who can log in once the services are up. */
  admin: { email: string; password: string };
  /** bcrypt's rounds in the users service: 10 makes a login slow enough for a forged reply to arrive first. */
  bcryptRounds: number;
  /** Where each service's transport logs (nowhere by default). */
  loggers?: { users?: Logger; auth?: Logger };
}

export interface ReferenceServices {
  db: Database;
  /** The users service's transport, then the auth service's. */
  transports: AmqpTransport[];
  /** Stops the services, closes their transports, drops their database and puts BUS_GATEWAY_USER back. */
  stop(): Promise<void>;
}

/**
 * The reference users and auth services in this process, each on its own broker user of `users` (`users-service`,
 * `auth-service`), on a database of their own. They take requests from the gateway's user through the SDK's default,
 * BUS_GATEWAY_USER, as deployed: it is set until stop(). Resolves once the administrator, created through the gateway
 * at `baseUrl`, can log in; on a failure on the way, what was started is stopped.
 */
export async function startReferenceServices(
  users: BrokerUsers,
  prefix: string,
  baseUrl: string,
  opts: ReferenceServicesOptions,
): Promise<ReferenceServices> {
  const savedGatewayUser = process.env.BUS_GATEWAY_USER;
  process.env.BUS_GATEWAY_USER = users.user('gateway');
  const running: RunningService[] = [];
  const transports: AmqpTransport[] = [];
  let database: TestDatabase | undefined;
  let db: Database | undefined;
  const stop = async (): Promise<void> => {
    for (const s of running) await s.stop().catch(() => undefined);
    for (const t of transports) await t.close().catch(() => undefined);
    await db?.close().catch(() => undefined);
    await database?.drop().catch(() => undefined);
    if (savedGatewayUser === undefined) delete process.env.BUS_GATEWAY_USER;
    else process.env.BUS_GATEWAY_USER = savedGatewayUser;
  };
  try {
    database = await createTestDatabase(opts.label);
    db = await openDatabase({ databaseUrl: database.url, dataDir: '' });
    const store = new UserStore(db);
    const usersTransport = new AmqpTransport(users.url('users-service'), {
      prefix,
      logger: opts.loggers?.users ?? quiet,
    });
    const authTransport = new AmqpTransport(users.url('auth-service'), { prefix, logger: opts.loggers?.auth ?? quiet });
    transports.push(usersTransport, authTransport);
    await Promise.all(transports.map((t) => t.start()));
    running.push(await startUsersService(usersTransport, { store, bcryptRounds: opts.bcryptRounds }));
    running.push(await startAuthService(authTransport, { db, store, env: { JWT_SECRET: TEST_JWT_SECRET } }));
    const { email, password } = opts.admin;
    await eventually(async () => {
      const r = await creator('POST', `${baseUrl}/api/users`, {
        body: { email, firstName: 'Ad', lastName: 'Min', password },
      });
      expect(r.status, r.text).to.equal(201);
    }, 15_000);
    await eventually(
      async () => expect((await http('POST', `${baseUrl}/api/login`, { body: opts.admin })).status).to.equal(200),
      15_000,
    );
    return { db, transports, stop };
  } catch (err) {
    await stop();
    throw err;
  }
}
