/**
 * The reference users service alone, in its own process (see one-service.ts), the first administrator seeded as
 * reference-services.js seeds it (ADMIN_EMAIL, ADMIN_PASSWORD). Beside scripts/auth-service.ts, each on a broker
 * user of its own (docs/operations.md, "Trust on the bus"); the benchmark runs it beside a gateway too.
 */
import { startUsersService } from '../examples/users-service';
import { UserStore } from '../examples/users-service/store';
import { runOneService } from './one-service';
import { seedAdmin } from './seed-admin';
import { helpIfAsked, ONE_SERVICE_SETTINGS } from './script-help';

helpIfAsked(`usage: node dist/scripts/users-service.js

The reference users service alone, on a broker user of its own; it makes the first administrator
(ADMIN_EMAIL, ADMIN_PASSWORD, ADMIN_PASSWORD_RESET) as npm start does.
${ONE_SERVICE_SETTINGS}`);

runOneService('users-service', async (transport, db, dataDir, log) => {
  const store = new UserStore(db);
  await seedAdmin(store, { dataDir, log, warn: log });
  return startUsersService(transport, { store });
});
