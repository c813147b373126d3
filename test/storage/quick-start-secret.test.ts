import { expect } from 'chai';
import { chmodSync, readFileSync, statSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { quickStartSecret } from '../../scripts/quick-start-secret';
import { tempDataDir } from '../support/databases';

describe('the quick start JWT secret', () => {
  let data: ReturnType<typeof tempDataDir>;
  beforeEach(() => (data = tempDataDir('secret')));
  afterEach(() => data.remove());

  it('is generated once, owner-only, and read back on the next start', () => {
    const first = quickStartSecret(data.dir);
    expect(first.created).to.equal(true);
    expect(first.secret).to.have.length.of.at.least(32);
    expect(statSync(first.file).mode & 0o777).to.equal(0o600);
    const second = quickStartSecret(data.dir);
    expect(second).to.deep.equal({ secret: first.secret, file: first.file, created: false });
  });

  it('tightens a restored copy readable by others instead of refusing it', () => {
    const { file, secret } = quickStartSecret(data.dir);
    chmodSync(file, 0o644);
    expect(quickStartSecret(data.dir).secret).to.equal(secret);
    expect(statSync(file).mode & 0o777).to.equal(0o600);
  });

  it('refuses a file with too short a secret, saying what to do', () => {
    const file = join(data.dir, 'jwt-secret');
    writeFileSync(file, 'short\n', { mode: 0o600 });
    expect(() => quickStartSecret(data.dir)).to.throw(
      `the JWT secret file ${file} holds fewer than 32 characters; delete it to generate a new one, or set JWT_SECRET`,
    );
    expect(readFileSync(file, 'utf8')).to.equal('short\n');
  });
});
