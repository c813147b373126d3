import './support';
import { expect } from 'chai';
import { extractPermissions, toAuthenticatedUser } from '../../plugin/auth/claims';
import { checkAuthConfig, resolveAuthConfig } from '../../plugin/settings/auth';
import { bearerToken } from '../../plugin/auth/bearer';
import { developmentModeWarning, developmentUser, warnIfDevelopmentMode } from '../../plugin/auth/dev-auth';
import { firstMissingPermission } from '../../plugin/auth/permissions';
import { TokenCache } from '../../plugin/auth/token-cache';

describe('auth: claims → AuthenticatedUser', () => {
  it('permissions: the permissions array first', () => {
    expect(
      extractPermissions({ permissions: ['a:b', 'c:d'], 'https://x/permissions': ['z:z'], scope: 's:t' }),
    ).to.deep.equal(['a:b', 'c:d']);
  });

  it('permissions: an empty permissions array still wins', () => {
    expect(extractPermissions({ permissions: [], scope: 's:t' })).to.deep.equal([]);
  });

  it('permissions: non-string items of the permissions array are dropped', () => {
    expect(extractPermissions({ permissions: ['a:b', 1, null, { x: 1 }] })).to.deep.equal(['a:b']);
  });

  it('permissions: else a claim whose name contains "permissions" holding an array of strings', () => {
    expect(extractPermissions({ 'https://example.com/permissions': ['x:y'], scope: 's:t' })).to.deep.equal(['x:y']);
    expect(extractPermissions({ userPermissions: ['u:v'] })).to.deep.equal(['u:v']);
    expect(extractPermissions({ APP_PERMISSIONS: ['w:w'] })).to.deep.equal(['w:w']);
  });

  it('permissions: such a claim is skipped unless it holds an array of strings', () => {
    expect(
      extractPermissions({ permissions: 'a:b', permissions_count: 3, my_permissions: [1, 2], scope: 'read write' }),
    ).to.deep.equal(['read', 'write']);
  });

  it('permissions: else the scope string split on spaces', () => {
    expect(extractPermissions({ scope: '  openid   users:read users:create ' })).to.deep.equal([
      'openid',
      'users:read',
      'users:create',
    ]);
  });

  it('permissions: else an empty list', () => {
    expect(extractPermissions({ scope: ['a'] })).to.deep.equal([]);
    expect(extractPermissions({})).to.deep.equal([]);
  });

  it('defaults: email <sub>@unknown, name = sub; roles only when present', () => {
    expect(toAuthenticatedUser({ sub: 'u9' })).to.deep.equal({
      userId: 'u9',
      email: 'u9@unknown',
      name: 'u9',
      permissions: [],
    });
    expect(toAuthenticatedUser({ sub: 'u9', email: '', name: 42, roles: ['r', 7] })).to.deep.equal({
      userId: 'u9',
      email: 'u9@unknown',
      name: 'u9',
      permissions: [],
      roles: ['r'],
    });
  });
});

describe('auth: configuration', () => {
  it('checkAuthConfig throws naming JWT_SECRET when it is shorter than 32 characters', () => {
    expect(() => checkAuthConfig({ JWT_SECRET: 'short' })).to.throw(/JWT_SECRET.*32/);
    expect(() => checkAuthConfig({ JWT_SECRET: 'x'.repeat(31) })).to.throw(/JWT_SECRET/);
    expect(() => checkAuthConfig({ JWT_SECRET: 'x'.repeat(32) })).not.to.throw();
    expect(() => checkAuthConfig({})).not.to.throw();
  });

  it('checkAuthConfig refuses an unusable JWKS_URI or JWT_CLOCK_TOLERANCE', () => {
    expect(() => checkAuthConfig({ JWKS_URI: 'not a url' })).to.throw(/JWKS_URI/);
    expect(() => checkAuthConfig({ JWKS_URI: 'file:///etc/passwd' })).to.throw(/JWKS_URI/);
    expect(() => checkAuthConfig({ JWT_CLOCK_TOLERANCE: 'ten' })).to.throw(/JWT_CLOCK_TOLERANCE/);
    expect(() => checkAuthConfig({ JWT_CLOCK_TOLERANCE: '-1' })).to.throw(/JWT_CLOCK_TOLERANCE/);
  });

  it('a short secret given as an action parameter is refused too', () => {
    expect(() => resolveAuthConfig({ jwtSecret: 'short' }, {})).to.throw(/JWT_SECRET/);
  });

  it('reads the environment, action parameters override it', () => {
    const env = {
      JWT_SECRET: 's'.repeat(32),
      JWKS_URI: 'https://idp/jwks',
      JWT_ISSUER: 'i',
      JWT_AUDIENCE: 'a',
      JWT_CLOCK_TOLERANCE: '15',
      DEVELOPMENT_AUTH_ENABLED: 'true',
    };
    const c = resolveAuthConfig({}, env);
    expect(c).to.include({
      jwtSecret: 's'.repeat(32),
      jwksUri: 'https://idp/jwks',
      issuer: 'i',
      audience: 'a',
      clockToleranceSeconds: 15,
      developmentAuthEnabled: true,
    });
    const o = resolveAuthConfig({ issuer: 'j', clockTolerance: 0, developmentAuthEnabled: false }, env);
    expect(o).to.include({ issuer: 'j', clockToleranceSeconds: 0, developmentAuthEnabled: false });
  });

  it('development mode only for exactly "true"', () => {
    for (const v of ['TRUE', '1', 'yes', 'True', ' true', undefined]) {
      expect(resolveAuthConfig({}, { DEVELOPMENT_AUTH_ENABLED: v }).developmentAuthEnabled, String(v)).to.equal(false);
    }
    expect(resolveAuthConfig({}, { DEVELOPMENT_AUTH_ENABLED: 'true' }).developmentAuthEnabled).to.equal(true);
  });

  it('the development-mode warning is loud and names the variable', () => {
    expect(developmentModeWarning())
      .to.match(/DEVELOPMENT_AUTH_ENABLED/)
      .and.to.match(/NEVER/);
    const logged: string[] = [];
    expect(warnIfDevelopmentMode({ error: (m) => logged.push(m) }, { DEVELOPMENT_AUTH_ENABLED: 'true' })).to.equal(
      true,
    );
    expect(warnIfDevelopmentMode({ error: (m) => logged.push(m) }, { DEVELOPMENT_AUTH_ENABLED: '1' })).to.equal(false);
    expect(logged).to.have.length(1);
  });
});

describe('auth: small pieces', () => {
  it('bearerToken', () => {
    expect(bearerToken(undefined)).to.equal(undefined);
    expect(bearerToken('  ')).to.equal(undefined);
    expect(bearerToken('Bearer')).to.equal('');
    expect(bearerToken('Bearer abc')).to.equal('abc');
    expect(bearerToken('bEaReR   abc ')).to.equal('abc');
    expect(bearerToken('abc')).to.equal('abc');
    expect(bearerToken('Bearerabc')).to.equal('Bearerabc');
    expect(bearerToken('Basic abc')).to.equal('Basic abc');
  });

  it('developmentUser', () => {
    expect(developmentUser({})).to.equal(undefined);
    expect(developmentUser({ 'x-dev-user-id': '' })).to.equal(undefined);
    expect(developmentUser({ 'x-dev-user-id': ' u1 ', 'x-dev-permissions': 'a, b ,,a' })).to.deep.equal({
      userId: 'u1',
      email: 'u1@development.local',
      name: 'Development User u1',
      permissions: ['a', 'b'],
    });
  });

  it('firstMissingPermission', () => {
    const user = { userId: 'u', email: 'e', name: 'n', permissions: ['a', 'b'] };
    expect(firstMissingPermission(user, ['a', 'c', 'd'])).to.equal('c');
    expect(firstMissingPermission(user, ['b', 'a'])).to.equal(undefined);
    expect(firstMissingPermission({ ...user, permissions: ['admin:all'] }, ['x'])).to.equal(undefined);
  });

  it('TokenCache: never past exp, bounded, hands out a frozen user that no request can change', () => {
    let t = 1_000_000;
    const cache = new TokenCache(2, 60_000, () => t);
    const user = { userId: 'u', email: 'e', name: 'n', permissions: ['p'] };
    cache.set('tok', user, (t + 2_000) / 1000);
    const got = cache.get('tok');
    expect(() => got!.permissions.push('admin:all')).to.throw(TypeError);
    expect(() => Object.assign(got!, { userId: 'other' })).to.throw(TypeError);
    user.permissions.push('later');
    expect(cache.get('tok')?.permissions, 'the cache keeps its own copy').to.deep.equal(['p']);
    t += 2_000;
    expect(cache.get('tok')).to.equal(undefined);
    cache.set('a', user, (t + 10_000) / 1000);
    cache.set('b', user, (t + 10_000) / 1000);
    cache.set('c', user, (t + 10_000) / 1000);
    expect(cache.size).to.equal(2);
    cache.set('late', user, (t - 1) / 1000); // accepted only thanks to the tolerance: not cached
    expect(cache.get('late')).to.equal(undefined);
  });
});
