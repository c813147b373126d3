import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { expect } from 'chai';
import plugin = require('../../plugin/manifest');

/** The version the host sees in the manifest is the package's own, not a second number kept by hand. */
describe('the plugin manifest', () => {
  it("declares package.json's version", () => {
    const path = join(__dirname, '..', '..', '..', 'package.json');
    const pkg = JSON.parse(readFileSync(path, 'utf8')) as { version: string };
    expect(pkg.version).to.match(/^\d+\.\d+\.\d+/);
    expect(plugin.version).to.equal(pkg.version);
  });
});
