import { expect } from 'chai';
import { buildOpenApiDocument } from '../../plugin/openapi/document';
import { HAND_WRITTEN_CONFIG, referenceContracts, trickyContracts } from './support';
import { handWrittenRoutes } from '../../plugin/openapi/hand-written';
import { planRoutes } from '../../plugin/contracts/route-plan';

interface Problem {
  rule: string;
  severity: string;
  message: string;
  at: string;
}

/**
 * Warnings of the recommended rules that do not apply here, by rule and place. operation-4xx-response: the
 * gateway's own read-only endpoints take no input and no credentials, so no client error is theirs to answer.
 */
const ALLOWED_WARNINGS = [
  'operation-4xx-response #/paths/~1health/get/responses',
  'operation-4xx-response #/paths/~1api-docs/get/responses',
  'operation-4xx-response #/paths/~1api-docs~1openapi.json/get/responses',
  'operation-4xx-response #/paths/~1debug~1contracts/get/responses',
];

/** Lints a document with Redocly's recommended rules, in process: no network, no config file. */
async function lint(document: unknown): Promise<Problem[]> {
  const { createConfig, lintFromString } = await import('@redocly/openapi-core');
  const config = await createConfig({ extends: ['recommended'] });
  const problems = await lintFromString({ source: JSON.stringify(document), absoluteRef: 'openapi.json', config });
  return problems.map((p) => ({
    rule: p.ruleId,
    severity: p.severity,
    message: p.message,
    at: p.location[0]?.pointer ?? '',
  }));
}

/** The problems that count: every error, and every warning not allowed above. */
function counted(problems: Problem[]): string[] {
  return problems
    .filter((p) => p.severity === 'error' || !ALLOWED_WARNINGS.includes(`${p.rule} ${p.at}`))
    .map((p) => `${p.severity} ${p.rule} ${p.at}: ${p.message}`);
}

describe('OpenAPI document: Redocly lint, recommended rules', () => {
  it("the reference services' document has no error and no warning", async () => {
    expect(counted(await lint(buildOpenApiDocument(planRoutes(referenceContracts()))))).to.deep.equal([]);
  });

  it('nor with debug endpoints, a gateway-wide rate limit, generic routes, local refs and odd message types', async () => {
    const problems = await lint(
      buildOpenApiDocument(planRoutes([...referenceContracts(), ...trickyContracts()]), {
        debugEndpoints: true,
        rateLimited: true,
      }),
    );
    expect(counted(problems)).to.deep.equal([]);
    // Every allowed warning is one the linter really gives, so the list cannot hide anything new.
    expect(problems.map((p) => `${p.rule} ${p.at}`).sort()).to.deep.equal([...ALLOWED_WARNINGS].sort());
    expect(counted(await lint(buildOpenApiDocument(planRoutes([]))))).to.deep.equal([]);
  });

  it('nor with one generic command and one generic query beside them (no oneOf of one), examples checked', async () => {
    const [, report, , archive] = trickyContracts();
    const document = buildOpenApiDocument(planRoutes([...referenceContracts(), report!, archive!]), {
      developmentAuth: true,
    });
    expect(document.paths['/api/actions']).to.have.property('post');
    expect(document.paths['/api/data']).to.have.property('get');
    expect(counted(await lint(document))).to.deep.equal([]);
  });

  it('nor with hand-written routes beside the generated ones, one contract served only by its pipeline', async () => {
    const handWritten = handWrittenRoutes(HAND_WRITTEN_CONFIG, 'contracts-');
    expect(handWritten).to.have.length.above(0);
    const document = buildOpenApiDocument(planRoutes(referenceContracts(), { excluded: ['CreateUserCommand'] }), {
      handWritten,
    });
    expect(counted(await lint(document))).to.deep.equal([]);
  });

  it('reports what an outside review found before: no servers, no licence, an unused component', async () => {
    const broken = JSON.parse(JSON.stringify(buildOpenApiDocument(planRoutes(referenceContracts()))));
    delete broken.servers;
    delete broken.info.license;
    broken.components.schemas.Unused = { type: 'object', additionalProperties: true };
    const rules = counted(await lint(broken)).join('\n');
    expect(rules).to.contain('error no-empty-servers');
    expect(rules).to.contain('warn info-license');
    expect(rules).to.contain('warn no-unused-components #/components/schemas/Unused');
  });
});
