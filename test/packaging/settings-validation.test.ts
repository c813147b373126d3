import { expect } from 'chai';
import { cpSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { InvalidSettingError } from '../../plugin/settings/invalid-setting';
import { hostSettingsSchema, validateSettings } from '../../plugin/settings/validation';
import { SETTINGS_SCHEMA } from '../../plugin/settings';
import { INVALID_SETTINGS_EXIT_CODE } from '../../plugin/settings/startup';
import { ROOT, run } from './support';
import { freePort } from '../support/env';

function failure(fn: () => unknown): InvalidSettingError {
  try {
    fn();
  } catch (err) {
    expect(err).to.be.instanceOf(InvalidSettingError);
    return err as InvalidSettingError;
  }
  throw new Error('expected an InvalidSettingError');
}

describe('plugin settings validation', () => {
  const env = {};

  it('accepts every property of the settings schema and converts strings to the schema types', () => {
    const out = validateSettings(
      { busUrl: 'amqp://u:p@rabbit:5672/vh', requestTimeoutMs: '2500', strictOutput: 'true', package: 'x' },
      env,
    );
    expect(out).to.deep.equal({
      busUrl: 'amqp://u:p@rabbit:5672/vh',
      requestTimeoutMs: 2500,
      strictOutput: true,
      package: 'x',
    });
    for (const key of Object.keys(SETTINGS_SCHEMA.properties)) {
      expect(() => validateSettings({ [key]: undefined }, env), key).not.to.throw();
    }
  });

  it('names an unknown setting, checked against the schema at validation time (settings added later are known)', () => {
    expect(failure(() => validateSettings({ busPrefx: 'x' }, env)).setting).to.equal('plugins.contracts.busPrefx');
    const props = SETTINGS_SCHEMA.properties as unknown as Record<string, unknown>;
    props.addedLater = { type: 'boolean' };
    try {
      expect(validateSettings({ addedLater: true }, env)).to.deep.equal({ addedLater: true });
    } finally {
      delete props.addedLater;
    }
  });

  it('names a malformed BUS_URL (block or environment) without echoing credentials', () => {
    for (const bad of ['amqp//rabbit', 'amqp://', 'http://rabbit:5672', 'amqp://u:secret@rabbit:99999']) {
      const e = failure(() => validateSettings({}, { BUS_URL: bad }));
      expect(e.setting, bad).to.equal('BUS_URL');
      expect(e.message).not.to.include('secret');
    }
    expect(failure(() => validateSettings({ busUrl: 'rabbit' }, env)).setting).to.equal('plugins.contracts.busUrl');
    expect(() => validateSettings({}, { BUS_URL: 'embedded' })).not.to.throw();
  });

  it('names bad numbers, patterns and flags, and a short JWT_SECRET', () => {
    expect(failure(() => validateSettings({}, { REQUEST_TIMEOUT_MS: 'soon' })).message).to.match(
      /^REQUEST_TIMEOUT_MS must be an integer/,
    );
    expect(failure(() => validateSettings({ busPrefix: 'a b' }, env)).setting).to.equal('plugins.contracts.busPrefix');
    expect(failure(() => validateSettings({}, { STRICT_OUTPUT: 'yes' })).setting).to.equal('STRICT_OUTPUT');
    expect(failure(() => validateSettings({}, { SHUTDOWN_GRACE_MS: '-1' })).setting).to.equal('SHUTDOWN_GRACE_MS');
    expect(failure(() => validateSettings({}, { DISCOVERY_GRACE_MS: 'a while' })).setting).to.equal(
      'DISCOVERY_GRACE_MS',
    );
    expect(() => validateSettings({}, { DISCOVERY_GRACE_MS: '0' })).not.to.throw();
    // A misspelt failure mode must not quietly mean open.
    expect(failure(() => validateSettings({}, { RATE_LIMIT_ON_STORE_FAILURE: 'close' })).message).to.equal(
      'RATE_LIMIT_ON_STORE_FAILURE must be one of open, closed (got "close")',
    );
    expect(failure(() => validateSettings({ rateLimitStoreTimeoutMs: 0 }, env)).setting).to.equal(
      'plugins.contracts.rateLimitStoreTimeoutMs',
    );
    expect(failure(() => validateSettings({}, { JWT_SECRET: 'too-short' })).setting).to.equal('JWT_SECRET');
    // A value in the block wins over the environment, so a bad variable behind it is not used and not checked.
    expect(() => validateSettings({ requestTimeoutMs: 5 }, { REQUEST_TIMEOUT_MS: 'soon' })).not.to.throw();
  });

  it('refuses a headers timeout longer than the request receive timeout, set in the block or the environment', () => {
    const e = failure(() => validateSettings({ headersTimeoutMs: 20000, requestReceiveTimeoutMs: 15000 }, env));
    expect(e.setting).to.equal('plugins.contracts.headersTimeoutMs');
    expect(e.message).to.include('requestReceiveTimeoutMs (15000)');
    expect(
      failure(() => validateSettings({}, { HEADERS_TIMEOUT_MS: '5000', REQUEST_RECEIVE_TIMEOUT_MS: '2000' })).setting,
    ).to.equal('HEADERS_TIMEOUT_MS');
    expect(failure(() => validateSettings({}, { HEADERS_TIMEOUT_MS: '500' })).setting, 'under 1 s').to.equal(
      'HEADERS_TIMEOUT_MS',
    );
    expect(failure(() => validateSettings({}, { MAX_CONNECTIONS: '0' })).setting).to.equal('MAX_CONNECTIONS');
    // Unset, the headers' timeout follows a shorter request timeout instead of stopping the start.
    expect(() => validateSettings({}, { REQUEST_RECEIVE_TIMEOUT_MS: '2000' })).not.to.throw();
  });

  it('gives the host a schema without constraints, so its silent skip never comes first', () => {
    const schema = hostSettingsSchema() as { $id: string; properties: Record<string, Record<string, unknown>> };
    expect(schema.$id).to.equal(SETTINGS_SCHEMA.$id);
    expect(Object.keys(schema.properties)).to.deep.equal(Object.keys(SETTINGS_SCHEMA.properties));
    for (const prop of Object.values(schema.properties))
      expect(Object.keys(prop)).to.satisfy((k: string[]) => k.every((n) => n === 'description'));
  });

  describe('a start with an invalid setting ends with one line naming it', function () {
    this.timeout(30000);
    const start = async (extraEnv: Record<string, string>, configDir: string) =>
      run(process.execPath, [join(ROOT, 'dist', 'scripts', 'start.js')], {
        env: {
          JWT_SECRET: 'a-valid-secret-of-more-than-32-characters!',
          // A port of its own in case a start gets further than it should (PORT=0 is refused as not a port).
          PORT: String(await freePort()),
          LOG_LEVEL: 'warn',
          EG_CONFIG_DIR: configDir,
          ...extraEnv,
        },
        timeoutMs: 20000,
      });
    let dir: string;
    beforeEach(() => {
      dir = mkdtempSync(join(tmpdir(), 'contracts-bad-'));
      cpSync(join(ROOT, 'config'), dir, { recursive: true });
    });
    afterEach(() => rmSync(dir, { recursive: true, force: true }));

    for (const [label, extra, named] of [
      ['a malformed BUS_URL', { BUS_URL: 'amqp//rabbitmq:5672' }, 'BUS_URL'],
      ['a short secret', { JWT_SECRET: 'short' }, 'JWT_SECRET'],
      [
        'a services file that is not there',
        { BUS_SERVICES_FILE: '/nonexistent/services.yml' },
        'BUS_SERVICES_FILE /nonexistent/services.yml: does not exist',
      ],
    ] as const) {
      it(label, async () => {
        const r = await start(extra, dir);
        expect(r.code, r.output).to.equal(INVALID_SETTINGS_EXIT_CODE);
        const lines = r.output.split('\n').filter((l) => l.includes('invalid setting'));
        expect(lines, r.output).to.have.length(1);
        expect(lines[0]).to.include(named);
      });
    }

    it('a malformed services file, named without echoing its contents', async () => {
      const file = join(dir, 'services.yml');
      writeFileSync(file, 'services:\n  a-service: {messageTypes: [A]\n  password: hunter2-secret\n');
      const r = await start({ BUS_SERVICES_FILE: file, START_REFERENCE_SERVICES: 'false' }, dir);
      expect(r.code, r.output).to.equal(INVALID_SETTINGS_EXIT_CODE);
      const lines = r.output.split('\n').filter((l) => l.includes('invalid setting'));
      expect(lines, r.output).to.have.length(1);
      expect(lines[0]).to.include(`BUS_SERVICES_FILE ${file}: is not valid YAML (line`);
      expect(r.output).to.not.include('hunter2');
    });

    it('an unknown setting in system.config.yml (the host would only log it and run without the plugin)', async () => {
      const file = join(dir, 'system.config.yml');
      writeFileSync(file, readFileSync(file, 'utf8').replace(/(\n\s+package: .*\n)/, '$1    busPrefx: oops\n'));
      const r = await start({ START_REFERENCE_SERVICES: 'false' }, dir);
      expect(r.code, r.output).to.equal(INVALID_SETTINGS_EXIT_CODE);
      const lines = r.output.split('\n').filter((l) => l.includes('invalid setting'));
      expect(lines, r.output).to.have.length(1);
      expect(lines[0]).to.include('plugins.contracts.busPrefx');
    });
  });
});
