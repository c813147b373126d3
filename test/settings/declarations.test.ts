import { expect } from 'chai';
import { envValue, givenValue, SETTING_DECLARATIONS, SETTING_ENV, type SettingDeclaration } from '../../plugin/settings/declarations';
import { SETTINGS_SCHEMA } from '../../plugin/settings';

const declarations = Object.entries(SETTING_DECLARATIONS as Record<string, SettingDeclaration>);

describe('the settings declarations (plugin/settings/declarations.ts)', () => {
  it('are the schema: one property per declaration, each its declared schema', () => {
    expect(Object.keys(SETTINGS_SCHEMA.properties)).to.deep.equal(declarations.map(([key]) => key));
    for (const [key, d] of declarations) expect((SETTINGS_SCHEMA.properties as Record<string, unknown>)[key], key).to.equal(d.schema);
  });

  it('are the environment map: each declared variable, one setting per variable', () => {
    expect(SETTING_ENV).to.deep.equal(Object.fromEntries(declarations.flatMap(([key, d]) => (d.env ? [[key, d.env]] : []))));
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
});
