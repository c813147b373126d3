import { expect } from 'chai';
import {
  envValue,
  givenValue,
  SETTING_DECLARATIONS,
  SETTING_ENV,
  type SettingDeclaration,
} from '../../plugin/settings/declarations';
import { SETTINGS_SCHEMA } from '../../plugin/settings';
import { AUTH_OVERRIDE_DECLARATIONS, resolveAuthConfig } from '../../plugin/settings/auth';
import { schema as jwtDevAuthSchema } from '../../policies/jwt-dev-auth/schema';

const declarations = Object.entries(SETTING_DECLARATIONS as Record<string, SettingDeclaration>);

describe('the settings declarations (plugin/settings/declarations.ts)', () => {
  it('are the schema: one property per declaration, each its declared schema', () => {
    expect(Object.keys(SETTINGS_SCHEMA.properties)).to.deep.equal(declarations.map(([key]) => key));
    for (const [key, d] of declarations)
      expect((SETTINGS_SCHEMA.properties as Record<string, unknown>)[key], key).to.equal(d.schema);
  });

  it('are the environment map: each declared variable, one setting per variable', () => {
    expect(SETTING_ENV).to.deep.equal(
      Object.fromEntries(declarations.flatMap(([key, d]) => (d.env ? [[key, d.env]] : []))),
    );
    const names = Object.values(SETTING_ENV);
    expect(new Set(names).size, 'a variable named twice').to.equal(names.length);
  });

  it('name in a description only the variable they declare', () => {
    let named = 0;
    for (const [key, d] of declarations) {
      const description = typeof d.schema.description === 'string' ? d.schema.description : '';
      for (const m of description.matchAll(/\benv ([A-Z][A-Z0-9_]+)/g)) {
        expect(m[1], `${key}: its description names ${m[1]}`).to.equal(d.env);
        named += 1;
      }
    }
    expect(named, 'descriptions naming a variable').to.be.above(20);
  });

  it('read the block first, then the declared variable, and no variable for a YAML-only setting', () => {
    const env = { BUS_PREFIX: 'from-env', WRITE_CONFIG: 'false' };
    expect(givenValue({ busPrefix: 'from-block' }, env, 'busPrefix')).to.equal('from-block');
    expect(givenValue({}, env, 'busPrefix')).to.equal('from-env');
    expect(givenValue({ busPrefix: null }, env, 'busPrefix')).to.equal('from-env');
    expect(envValue(env, 'writeConfig')).to.equal(undefined);
    expect(givenValue({}, env, 'writeConfig')).to.equal(undefined);
  });

  it('of the authentication overrides are the jwt-dev-auth action schema and the variables resolveAuthConfig reads', () => {
    const properties = jwtDevAuthSchema.properties as Record<string, unknown>;
    const withEnv = Object.entries(AUTH_OVERRIDE_DECLARATIONS).flatMap(([key, d]) =>
      'env' in d ? [[key, d.env] as const] : [],
    );
    expect(withEnv.length).to.equal(6);
    for (const [key, d] of Object.entries(AUTH_OVERRIDE_DECLARATIONS)) expect(properties[key], key).to.equal(d.schema);
    const config = resolveAuthConfig(
      {},
      {
        JWT_ISSUER: 'https://issuer.example',
        JWT_AUDIENCE: 'api',
        JWT_CLOCK_TOLERANCE: '3',
        DEVELOPMENT_AUTH_ENABLED: 'true',
      },
    );
    expect([config.issuer, config.audience, config.clockToleranceSeconds, config.developmentAuthEnabled]).to.deep.equal(
      ['https://issuer.example', 'api', 3, true],
    );
    expect(() => resolveAuthConfig({}, { JWT_SECRET: 'short' }))
      .to.throw('JWT_SECRET must be at least 32 characters long (it has 5)')
      .with.property('setting', 'JWT_SECRET');
  });
});
