import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { expect } from 'chai';
import { validateAnnouncement, DEFAULT_MAX_TTL_MS } from '../../plugin/contracts/announcement-validation';
import { DEFAULT_ANNOUNCEMENT_LIMITS } from '../../plugin/contracts/limits';

const DEFAULT_MAX_CONTRACTS = DEFAULT_ANNOUNCEMENT_LIMITS.maxContracts;
import { isReply } from '../../plugin/bus/envelope';
import { ERROR_CODES, codeInfo, isKnownCode } from '../../plugin/errors/codes';
import { fromServiceError, toErrorBody } from '../../plugin/errors/error-body';
import { deriveRoutes } from '../../plugin/contracts/derive-routes';

/**
 * docs/bus-protocol.md is what a service author in another language works from: its examples must be what the
 * gateway accepts, checked here with the gateway's own validators rather than a copy of their rules.
 */
const doc = readFileSync(join(__dirname, '..', '..', '..', 'docs', 'bus-protocol.md'), 'utf8');

function jsonBlocks(text: string): string[] {
  return [...text.matchAll(/^```json\n([\s\S]*?)^```$/gm)].map((m) => m[1] as string);
}

function section(title: string): string {
  const start = doc.indexOf(`\n## ${title}\n`);
  expect(start, `section "${title}"`).to.be.greaterThan(-1);
  const end = doc.indexOf('\n## ', start + 1);
  return doc.slice(start, end === -1 ? undefined : end);
}

const parsed = jsonBlocks(doc).map((text) => JSON.parse(text) as Record<string, unknown>);
const isAnnouncementExample = (v: Record<string, unknown>): boolean => 'service' in v && 'instanceId' in v;
const isReplyExample = (v: Record<string, unknown>): boolean => 'ok' in v;

describe('docs/bus-protocol.md against the implementation', () => {
  it('its worked Python example is examples/python/service.py, byte for byte (the file the conformance kit runs)', () => {
    const blocks = [...doc.matchAll(/^```python\n([\s\S]*?)^```$/gm)].map((m) => m[1] as string);
    expect(blocks).to.have.length(1);
    const file = readFileSync(join(__dirname, '..', '..', '..', 'examples', 'python', 'service.py'), 'utf8');
    expect(blocks[0] === file, 'docs/bus-protocol.md and examples/python/service.py differ').to.equal(true);
  });

  it('has JSON examples, and every ```json block parses', () => {
    const blocks = jsonBlocks(doc);
    expect(blocks.length).to.be.greaterThan(5);
    for (const text of blocks) expect(() => JSON.parse(text), text).not.to.throw();
  });

  it('shows announcements and a withdrawal that the gateway accepts, with the routes the text names', () => {
    const announcements = parsed.filter(isAnnouncementExample);
    expect(
      announcements.filter((a) => a.withdrawn === true),
      'a withdrawal',
    ).to.have.length(1);
    expect(
      announcements.filter((a) => a.withdrawn !== true),
      'an announcement',
    ).to.have.length.greaterThan(0);
    for (const a of announcements) {
      const result = validateAnnouncement(a);
      expect(result, JSON.stringify(a)).to.deep.include({ ok: true });
      if (!result.ok) continue;
      for (const contract of result.announcement.contracts) {
        expect(contract.targetService, 'targetService = service').to.equal(a.service);
      }
    }
    const full = announcements.find((a) => Array.isArray(a.contracts) && a.contracts.length > 0);
    const validated = validateAnnouncement(full);
    if (!validated.ok) throw new Error(validated.reason);
    const paths = validated.announcement.contracts.flatMap((c) => deriveRoutes(c).map((r) => `${r.method} ${r.path}`));
    // The worked example's route, as the document states it.
    expect(paths).to.include('GET /api/products/:productId');
    expect(doc).to.contain('GET /api/products/p1');
  });

  it('shows replies that are valid envelopes, with known codes and the statuses the document gives', () => {
    const replies = parsed.filter(isReplyExample);
    expect(replies.filter((r) => r.ok === true)).to.have.length.greaterThan(0);
    expect(replies.filter((r) => r.ok === false)).to.have.length.greaterThan(0);
    for (const reply of replies) {
      expect(isReply(reply), JSON.stringify(reply)).to.equal(true);
      if (reply.ok !== false) continue;
      const error = reply.error as Record<string, unknown>;
      expect(Object.keys(ERROR_CODES), 'a code of the table').to.include(error.code);
      const answered = toErrorBody(fromServiceError(error, 'catalog-service'));
      const expected =
        typeof error.status === 'number'
          ? error.status
          : isKnownCode(error.code)
            ? codeInfo(error.code).status
            : undefined;
      expect(answered.status, JSON.stringify(reply)).to.equal(expected);
      expect(answered.body.code).to.equal(error.code);
    }
  });

  it('shows a request envelope and a user header of the shape the gateway sends', () => {
    const requests = parsed.filter((v) => 'input' in v);
    expect(requests).to.have.length.greaterThan(0);
    for (const r of requests) expect(r.input).to.be.an('object').and.not.be.an('array');
    const users = parsed.filter((v) => 'userId' in v);
    expect(users).to.have.length(1);
    expect(users[0]).to.have.keys('userId', 'email', 'name', 'permissions', 'roles');
  });

  it('lists every error code with the status the gateway gives it, and no other', () => {
    const rows = [...section('Error codes').matchAll(/^\| `([A-Z_]+)` \| (\d{3})/gm)].map((m) => [m[1], Number(m[2])]);
    expect(Object.fromEntries(rows)).to.deep.equal(
      Object.fromEntries(Object.entries(ERROR_CODES).map(([code, info]) => [code, info.status])),
    );
  });

  it('states the announcement limits the registry applies', () => {
    const rules = section('Announcing contracts');
    expect(rules).to.contain(`(0, ${DEFAULT_MAX_TTL_MS}]`);
    expect(rules).to.contain(`more contracts than the limit (${DEFAULT_MAX_CONTRACTS} by default`);
    // The limits the text gives are the ones the registry applies.
    const base = { service: 's', instanceId: 'i', contracts: [] };
    expect(validateAnnouncement({ ...base, ttlMs: DEFAULT_MAX_TTL_MS }).ok).to.equal(true);
    expect(validateAnnouncement({ ...base, ttlMs: DEFAULT_MAX_TTL_MS + 1 }).ok).to.equal(false);
    const contract = (messageType: string) => ({
      messageType,
      targetService: 's',
      inputSchema: {},
      outputSchema: {},
      requiredPermissions: [],
    });
    const many = Array.from({ length: DEFAULT_MAX_CONTRACTS + 1 }, (_, i) => contract(`Do${i}Command`));
    expect(validateAnnouncement({ ...base, ttlMs: 1000, contracts: many }).ok).to.equal(false);
    expect(
      validateAnnouncement({ ...base, ttlMs: 1000, contracts: [contract('GetXQuery'), contract('GetXQuery')] }).ok,
    ).to.equal(false);
    expect(
      validateAnnouncement({ ...base, ttlMs: 1000, contracts: [contract('GetXQuery'), contract('bad type')] }).ok,
    ).to.equal(false);
  });
});
