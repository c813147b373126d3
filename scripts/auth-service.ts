/**
 * The reference auth service alone, in its own process (see one-service.ts): logins and tokens for the accounts of
 * the users service, whose database it shares (DATABASE_URL). JWT_SECRET signs the tokens the gateway verifies.
 */
import { startAuthService } from '../examples/auth-service';
import { UserStore } from '../examples/users-service/store';
import { runOneService } from './one-service';

runOneService('auth-service', (transport, db) => startAuthService(transport, { db, store: new UserStore(db) }));
