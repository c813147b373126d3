import { expect } from 'chai';
import { resolveSettings } from '../../plugin/settings';
import { InvalidSettingError } from '../../plugin/settings/invalid-setting';
import { validateSettings } from '../../plugin/settings/validation';

describe('bus trust settings', () => {
  it('reads the ownership pins from the plugin settings', () => {
    const block = validateSettings(
      {
        ownedMessageTypes: { 'users-service': ['ListUsersQuery', 'User*'] },
        ownedPathPrefixes: { 'auth-service': ['/api/login'] },
        publicContractServices: ['auth-service'],
        httpPathServices: ['auth-service'],
        allowPathsOutsideApi: 'true',
      },
      {},
    );
    expect(resolveSettings(block, {}).ownership).to.deep.equal({
      messageTypes: { 'users-service': ['ListUsersQuery', 'User*'] },
      pathPrefixes: { 'auth-service': ['/api/login'] },
      publicServices: ['auth-service'],
      httpPathServices: ['auth-service'],
      allowPathsOutsideApi: true,
    });
  });

  it('defaults to first-come with no pins, any service public or with http.paths, and paths only under /api/', () => {
    expect(resolveSettings({}, {}).ownership).to.deep.equal({
      messageTypes: {},
      pathPrefixes: {},
      allowPathsOutsideApi: false,
    });
  });

  it('refuses a malformed pin at start, naming the setting', () => {
    expect(() => validateSettings({ ownedPathPrefixes: { 'auth-service': ['api/login'] } }, {})).to.throw(
      InvalidSettingError,
      'plugins.contracts.ownedPathPrefixes',
    );
    expect(() => validateSettings({ publicContractServices: 'auth-service' }, {})).to.throw(
      InvalidSettingError,
      'plugins.contracts.publicContractServices',
    );
  });
});
