import { expect } from 'chai';
import { resolveEdgeSettings } from '../../plugin/settings/edge';
import { corsAction, CORS_EXPOSED_HEADERS } from '../../plugin/edge/cors';
import { resolveSettings } from '../../plugin/settings';
import { validateSettings } from '../../plugin/settings/validation';

describe('edge settings and the cors step', () => {
  it('defaults: any origin, no credentials, no PATCH, no gateway-wide limit, 60 a minute per address to public contracts, 10 s for headers, 30 s for a request, no connection cap', () => {
    expect(resolveEdgeSettings({}, {})).to.deep.equal({
      corsOrigins: '*',
      corsCredentials: false,
      corsAllowPatch: false,
      rateLimitMax: undefined,
      rateLimitWindowMs: 60000,
      publicRateLimitMax: 60,
      publicRateLimitWindowMs: 60000,
      rateLimitPrefix: 'contracts',
      rateLimitOnStoreFailure: 'open',
      rateLimitStoreTimeoutMs: 500,
      headersTimeoutMs: 10000,
      requestReceiveTimeoutMs: 30000,
    });
  });

  it('reads the receive timeouts and the connection cap; an unset headers timeout never exceeds the request one', () => {
    expect(
      resolveEdgeSettings(
        {},
        { HEADERS_TIMEOUT_MS: '4000', REQUEST_RECEIVE_TIMEOUT_MS: '9000', MAX_CONNECTIONS: '100' },
      ),
    ).to.include({ headersTimeoutMs: 4000, requestReceiveTimeoutMs: 9000, maxConnections: 100 });
    expect(resolveEdgeSettings({ requestReceiveTimeoutMs: 3000 }, {})).to.include({
      headersTimeoutMs: 3000,
      requestReceiveTimeoutMs: 3000,
    });
    expect(resolveEdgeSettings({}, { MAX_CONNECTIONS: 'many' })).not.to.have.property('maxConnections');
  });

  it('reads the environment when the settings block leaves a value out, the block first', () => {
    const env = {
      CORS_ORIGINS: 'https://a.example, https://b.example',
      CORS_CREDENTIALS: 'true',
      CORS_ALLOW_PATCH: 'true',
      RATE_LIMIT_MAX: '50',
      RATE_LIMIT_WINDOW_MS: '30000',
      RATE_LIMIT_PREFIX: 'run-1',
      RATE_LIMIT_ON_STORE_FAILURE: 'closed',
      RATE_LIMIT_STORE_TIMEOUT_MS: '250',
    };
    expect(resolveEdgeSettings({}, env)).to.deep.include({
      corsOrigins: ['https://a.example', 'https://b.example'],
      corsCredentials: true,
      corsAllowPatch: true,
      rateLimitMax: 50,
      rateLimitWindowMs: 30000,
      rateLimitPrefix: 'run-1',
      rateLimitOnStoreFailure: 'closed',
      rateLimitStoreTimeoutMs: 250,
    });
    expect(resolveEdgeSettings({ corsCredentials: false, rateLimitMax: 7, corsOrigins: ['*'] }, env)).to.include({
      corsCredentials: false,
      rateLimitMax: 7,
      corsOrigins: '*',
    });
  });

  it('ignores unusable values instead of guessing', () => {
    const s = resolveEdgeSettings(
      {},
      { RATE_LIMIT_MAX: 'lots', RATE_LIMIT_WINDOW_MS: '10', RATE_LIMIT_PREFIX: 'bad prefix!', CORS_CREDENTIALS: 'yes' },
    );
    expect(s).to.include({
      rateLimitMax: undefined,
      rateLimitWindowMs: 60000,
      rateLimitPrefix: 'contracts',
      corsCredentials: false,
    });
  });

  it('limits public contracts per address unless the limit is named off, from the block or the environment', () => {
    expect(resolveEdgeSettings({}, { PUBLIC_RATE_LIMIT_MAX: '20', PUBLIC_RATE_LIMIT_WINDOW_MS: '10000' })).to.include({
      publicRateLimitMax: 20,
      publicRateLimitWindowMs: 10000,
    });
    expect(resolveEdgeSettings({ publicRateLimitMax: 5 }, { PUBLIC_RATE_LIMIT_MAX: 'off' })).to.include({
      publicRateLimitMax: 5,
    });
    expect(resolveEdgeSettings({ publicRateLimitMax: 'off' }, {}).publicRateLimitMax).to.equal(undefined);
    expect(resolveEdgeSettings({}, { PUBLIC_RATE_LIMIT_MAX: ' off ' }).publicRateLimitMax).to.equal(undefined);
    // Anything but `off` keeps it on, and the start refuses what it cannot read.
    for (const v of ['of', 'false', '0', 'none', ''])
      expect(resolveEdgeSettings({}, { PUBLIC_RATE_LIMIT_MAX: v }).publicRateLimitMax, v).to.equal(60);
    for (const v of ['of', 'false', '0', 'none'])
      expect(() => validateSettings({}, { PUBLIC_RATE_LIMIT_MAX: v }), v).to.throw(/^PUBLIC_RATE_LIMIT_MAX must be/);
    expect(() => validateSettings({ publicRateLimitMax: 'Off' }, {})).to.throw(/publicRateLimitMax must be/);
    expect(() => validateSettings({}, { PUBLIC_RATE_LIMIT_WINDOW_MS: '500' })).to.throw(/>= 1000/);
    expect(validateSettings({ publicRateLimitMax: 'off' }, { PUBLIC_RATE_LIMIT_MAX: 'off' })).to.deep.equal({
      publicRateLimitMax: 'off',
    });
  });

  it('is part of the plugin settings', () => {
    expect(resolveSettings({}, { RATE_LIMIT_MAX: '3' })).to.include({ rateLimitMax: 3, corsOrigins: '*' });
  });

  it('builds the CORS answer: *, methods, headers, exposed headers, max age 86400, 204', () => {
    const action = corsAction();
    expect(action).to.deep.equal({
      origin: '*',
      methods: ['GET', 'POST', 'PUT', 'DELETE', 'OPTIONS'],
      allowedHeaders: [
        'Authorization',
        'Content-Type',
        'X-Dev-User-Id',
        'X-Dev-Permissions',
        'X-Correlation-Id',
        'traceparent',
        'Idempotency-Key',
      ],
      exposedHeaders: CORS_EXPOSED_HEADERS,
      credentials: false,
      maxAge: 86400,
      optionsSuccessStatus: 204,
      preflightContinue: false,
    });
    expect(action.exposedHeaders).to.include.members([
      'X-Correlation-Id',
      'X-Request-Id',
      'Location',
      'Retry-After',
      'X-RateLimit-Limit',
      'X-RateLimit-Remaining',
      'X-RateLimit-Reset',
    ]);
  });

  it('reflects the request origin when credentials are on with any origin (browsers refuse * with credentials)', () => {
    expect(corsAction({ corsOrigins: '*', corsCredentials: true, corsAllowPatch: true })).to.include({
      origin: true,
      credentials: true,
    });
    expect(corsAction({ corsOrigins: '*', corsCredentials: true, corsAllowPatch: true }).methods).to.deep.equal([
      'GET',
      'POST',
      'PUT',
      'DELETE',
      'PATCH',
      'OPTIONS',
    ]);
    expect(
      corsAction({ corsOrigins: ['https://app.example'], corsCredentials: true, corsAllowPatch: false }).origin,
    ).to.deep.equal(['https://app.example']);
  });
});
