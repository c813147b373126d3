import { expect } from 'chai';
import { chmodSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { readServicesFile } from '../../plugin/bus/services-file';
import { run } from '../../plugin/cli/contracts-broker-definitions';
import { resolveBusTrustSettings } from '../../plugin/settings/bus-trust';
import { InvalidSettingError } from '../../plugin/settings/invalid-setting';
import { validateSettings } from '../../plugin/settings/validation';

const GOOD = `
services:
  users-service:
    messageTypes: [CreateUserCommand, 'User*']
    pathPrefixes: [/api/users]
    httpPaths: true
  auth-service:
    user: svc-auth
    messageTypes: [AuthenticateCommand]
    public: true
`;

describe('the services file (one list for broker definitions and the gateway)', () => {
  let dir: string;
  const write = (name: string, text: string): string => {
    const file = join(dir, name);
    writeFileSync(file, text);
    return file;
  };
  before(() => (dir = mkdtempSync(join(tmpdir(), 'services-file-'))));
  after(() => rmSync(dir, { recursive: true, force: true }));

  it('reads users (default: the service name), owned message types, path prefixes and what each may declare', () => {
    expect(readServicesFile(write('good.yml', GOOD))).to.deep.equal({
      'users-service': {
        user: 'users-service',
        messageTypes: ['CreateUserCommand', 'User*'],
        pathPrefixes: ['/api/users'],
        public: false,
        httpPaths: true,
      },
      'auth-service': {
        user: 'svc-auth',
        messageTypes: ['AuthenticateCommand'],
        pathPrefixes: [],
        public: true,
        httpPaths: false,
      },
    });
  });

  it('refuses a missing, unreadable or malformed file, an unknown key or a bad entry, naming the file and never echoing it', () => {
    const cases: Array<[string, string]> = [
      [
        'services:\n  a-service:\n    messageTypes: [A]\n    owns: [B]\n',
        'services.a-service has an unknown key "owns" (known: user, messageTypes, pathPrefixes, public, httpPaths)',
      ],
      [
        'services:\n  a-service:\n    messageTypes: [A]\nsecret: hunter2\n',
        'has an unknown key "secret" (known: services)',
      ],
      ['services:\n  a-service: {messageTypes: [A]\n  password: hunter2-oops', 'is not valid YAML (line'],
      [
        'services:\n  a-service:\n    user: shared\n    messageTypes: [A]\n  b-service:\n    user: shared\n    messageTypes: [B]\n',
        'services.b-service.user is also the broker user of a-service',
      ],
      ['services:\n  a-service:\n    pathPrefixes: [/api/a]\n', 'services.a-service.messageTypes is missing'],
      [
        'services:\n  a-service:\n    messageTypes: ["Bad Type"]\n',
        'services.a-service.messageTypes[0] is not a message type',
      ],
      [
        'services:\n  a-service:\n    messageTypes: [A]\n    public: "yes"\n',
        'services.a-service.public must be true or false',
      ],
      ['services: {}\n', 'services must map at least one service name'],
      ['- a\n', 'must be a mapping with a services key'],
    ];
    cases.forEach(([text, problem], i) => {
      const file = write(`bad${i}.yml`, text);
      expect(() => readServicesFile(file)).to.throw(`${file}: ${problem}`);
      try {
        readServicesFile(file);
      } catch (err) {
        expect((err as Error).message).to.not.include('hunter2');
      }
    });
    expect(() => readServicesFile(join(dir, 'nope.yml'))).to.throw(`${join(dir, 'nope.yml')}: does not exist`);
    expect(() => readServicesFile(dir)).to.throw(`${dir}: is a directory`);
    if (process.getuid?.() !== 0) {
      const locked = write('locked.yml', GOOD);
      chmodSync(locked, 0o000);
      expect(() => readServicesFile(locked)).to.throw('is not readable');
    }
  });

  it('contracts-broker-definitions --services writes a user per listed service, and refuses a second list beside it', () => {
    const file = write('cli.yml', GOOD);
    const env = { BROKER_PASSWORD_GATEWAY: 'g', BROKER_PASSWORD_USERS_SERVICE: 'u', BROKER_PASSWORD_SVC_AUTH: 'a' };
    const defs = JSON.parse(run(['--prefix', 'p', '--services', file], env));
    expect(defs.users.map((u: { name: string }) => u.name)).to.deep.equal(['gateway', 'users-service', 'svc-auth']);
    expect(
      defs.topic_permissions.find(
        (t: { user: string; exchange: string }) =>
          t.user === 'svc-auth' && t.exchange === 'p.announcements.auth-service',
      ).write,
    ).to.equal('^announce\\.auth-service$');
    expect(() => run(['--services', file, '--service', 'x'], env)).to.throw(
      '--services replaces --service and --user-prefix',
    );
    expect(() => run(['--services', file, '--user-prefix', 'svc-'], env)).to.throw(
      '--services replaces --service and --user-prefix',
    );
    expect(() => run(['--services', join(dir, 'nope.yml')], env)).to.throw('nope.yml: does not exist');
  });

  it('the gateway takes announcement users and pins from the same file, and requires broker users', () => {
    const file = write('gw.yml', GOOD);
    const s = resolveBusTrustSettings({}, { BUS_SERVICES_FILE: file });
    expect(s.requireAnnouncementUser).to.equal(true);
    expect(s.announcementUsers).to.deep.equal({ 'users-service': 'users-service', 'auth-service': 'svc-auth' });
    expect(s.servicesFile).to.equal(file);
    expect(s.ownership).to.deep.include({
      messageTypes: { 'users-service': ['CreateUserCommand', 'User*'], 'auth-service': ['AuthenticateCommand'] },
      publicServices: ['auth-service'],
      httpPathServices: ['users-service'],
      ownedOnly: true,
    });
    expect(s.ownership.pathPrefixes).to.deep.include({ 'users-service': ['/api/users'] });
  });

  it('stops the start with one line naming the setting and the file: a bad file, or a second list beside it', () => {
    const file = write('start.yml', GOOD);
    const problem = (raw: Record<string, unknown>, env: NodeJS.ProcessEnv): string => {
      try {
        validateSettings(raw, env);
      } catch (err) {
        expect(err).to.be.instanceOf(InvalidSettingError);
        return (err as Error).message;
      }
      return 'accepted';
    };
    expect(problem({}, { BUS_SERVICES_FILE: join(dir, 'gone.yml') })).to.equal(
      `BUS_SERVICES_FILE ${join(dir, 'gone.yml')}: does not exist`,
    );
    expect(problem({ busServicesFile: write('unknown.yml', 'servces: {}\n') }, {})).to.equal(
      `busServicesFile ${join(dir, 'unknown.yml')}: has an unknown key "servces" (known: services)`,
    );
    expect(problem({ busServicesFile: file, ownedMessageTypes: { a: ['A'] } }, {})).to.equal(
      `busServicesFile ${file}: ownedMessageTypes is set too; the services file replaces it (one list)`,
    );
    expect(problem({}, { BUS_SERVICES_FILE: file, ANNOUNCEMENT_USERS: 'a=b' })).to.equal(
      `BUS_SERVICES_FILE ${file}: ANNOUNCEMENT_USERS is set too; the services file replaces it (one list)`,
    );
    expect(problem({ busServicesFile: file, requireAnnouncementUser: false }, {})).to.match(
      /requireAnnouncementUser is false/,
    );
    expect(problem({ busServicesFile: file }, {})).to.equal('accepted');
    expect(() => resolveBusTrustSettings({}, { BUS_SERVICES_FILE: join(dir, 'gone.yml') })).to.throw('does not exist');
  });

  it('caps leases at maxLeaseMs (default 30 s; env MAX_LEASE_MS)', () => {
    expect(resolveBusTrustSettings({}, {}).maxLeaseMs).to.equal(30_000);
    expect(resolveBusTrustSettings({}, { MAX_LEASE_MS: '5000' }).maxLeaseMs).to.equal(5000);
    expect(resolveBusTrustSettings({ maxLeaseMs: 8000 }, { MAX_LEASE_MS: '5000' }).maxLeaseMs).to.equal(8000);
    expect(() => validateSettings({}, { MAX_LEASE_MS: '10' })).to.throw('MAX_LEASE_MS must be >= 1000');
  });
});
