/**
 * The reference auth service alone, in its own process (see one-service.ts): logins and tokens for the accounts of
 * the users service, whose database it shares (DATABASE_URL). JWT_SECRET signs the tokens the gateway verifies.
 */
import { startAuthService } from '../examples/auth-service';
import { UserStore } from '../examples/users-service/store';
import { runOneService } from './one-service';
import { helpIfAsked, ONE_SERVICE_SETTINGS } from './script-help';

helpIfAsked(`usage: node dist/scripts/auth-service.js

The reference auth service alone (logins, refresh, logout, external logins), on a broker user of its own.
JWT_SECRET signs the tokens the gateway verifies (JWT_ISSUER, JWT_AUDIENCE as the gateway's).
${ONE_SERVICE_SETTINGS}`);

runOneService('auth-service', (transport, db) => startAuthService(transport, { db, store: new UserStore(db) }));
