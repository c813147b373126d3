import { expect } from 'chai';
import { execFile } from 'node:child_process';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { dirname, join } from 'node:path';
import { buildOpenApiDocument } from '../../plugin/openapi/document';
import { ERROR_CODES } from '../../plugin/errors/codes';
import { referenceContracts } from './support';
import { planRoutes } from '../../plugin/contracts/route-plan';

/** openapi-typescript's Node API, from the package that installs it beside the TypeScript 5 it needs. */
interface TypeGen {
  default: (schema: object) => Promise<unknown>;
  astToString: (ast: unknown) => string;
}
const typegen = require('openapi-typegen-check') as TypeGen;

const TSC = join(dirname(require.resolve('typescript/package.json')), 'bin', 'tsc');

/**
 * What a client written against the generated types does without a cast or a check: switch over every error code
 * (exhaustively: a code missing from the enum, or one too many, does not compile) and read the fields that are
 * always there. GetUserQuery's output may leave out any field but its ids (?fields=), so reading another unchecked
 * must not compile; GET /api/users's list and single user are told apart by `'users' in data`.
 */
function usage(): string {
  const cases = Object.keys(ERROR_CODES)
    .map((code) => `    case '${code}': return e.message;`)
    .join('\n');
  return `import type { components, paths } from './api';

type Json<R> = R extends { content: { 'application/json': infer B } } ? B : never;
type ErrorBody = components['schemas']['ErrorBody'];

export function explain(e: ErrorBody): string {
  const id: string = e.correlationId;
  const at: string = e.timestamp;
  void id; void at;
  switch (e.code) {
${cases}
    default: {
      const unknownCode: never = e.code;
      return unknownCode;
    }
  }
}

type Login = paths['/api/login']['post'];
export function session(ok: Json<Login['responses'][200]>): string[] {
  const permissions: string[] = ok.user.permissions;
  const parts: string[] = [ok.accessToken, ok.refreshToken, ok.tokenType, ok.user.userId, ok.user.email, ok.user.name];
  const seconds: number = ok.expiresIn;
  const success: boolean = ok.success;
  return [...parts, ...permissions, String(seconds), String(success)];
}
export function loginRefused(refused: Json<Login['responses'][401]>): boolean {
  return refused.code === 'INVALID_CREDENTIALS';
}
type Refresh = paths['/api/refresh-token']['post'];
export function refreshRefused(refused: Json<Refresh['responses'][401]>): boolean {
  return refused.code === 'INVALID_TOKEN';
}
export function refreshed(ok: Json<Refresh['responses'][200]>): string {
  const token: string = ok.accessToken;
  return token + ok.tokenType;
}

type CreateUser = paths['/api/users']['post'];
export function created(user: Json<CreateUser['responses'][201]>): string[] {
  const role: 'user' | 'admin' = user.role;
  const permissions: string[] = user.permissions;
  return [user.userId, user.email, user.createdAt, user.updatedAt, role, ...permissions];
}
type UpdateUser = paths['/api/users/{userId}']['put'];
export function updated(user: Json<UpdateUser['responses'][200]>): string {
  const at: string = user.updatedAt;
  return at;
}
type Discovery = paths['/api/discovery/contracts']['get'];
export function schemaKeys(listing: Json<Discovery['responses'][200]>): string[] {
  return listing.contracts.flatMap((c) => Object.keys(c.inputSchema).concat(Object.keys(c.outputSchema)));
}

type GetUser = paths['/api/users/{userId}']['get'];
export function selected(user: Json<GetUser['responses'][200]>): string {
  const id: string = user.userId + user.id;
  // @ts-expect-error the other fields to return are chosen by ?fields=
  const email: string = user.email;
  return id + email;
}

// GET /api/users is the list, or with ?userId= one user: docs/openapi.md's way of telling them apart.
type Users = paths['/api/users']['get'];
export function listOrOne(data: Json<Users['responses'][200]>): string[] {
  if ('users' in data) return data.users.map((u) => u.email).concat(String(data.totalCount));
  return [data.userId, data.id];
}
`;
}

interface Compiled {
  ok: boolean;
  output: string;
}

/** The lines of the usage file the compiler refused. */
function refusedLines({ output }: Compiled): string[] {
  const lines = usage().split('\n');
  return [...output.matchAll(/usage\.ts\((\d+),\d+\): error/g)].map((m) => (lines[Number(m[1]) - 1] ?? '').trim());
}

/** Types generated from the document, then the usage compiled against them by the project's TypeScript (strict). */
async function compileAgainst(document: object): Promise<Compiled> {
  const dir = mkdtempSync(join(tmpdir(), 'openapi-client-'));
  try {
    writeFileSync(join(dir, 'api.d.ts'), typegen.astToString(await typegen.default(document)));
    writeFileSync(join(dir, 'usage.ts'), usage());
    const compilerOptions = {
      strict: true,
      noEmit: true,
      target: 'ES2022',
      lib: ['ES2022'],
      module: 'preserve',
      moduleResolution: 'bundler',
      types: [],
    };
    writeFileSync(join(dir, 'tsconfig.json'), JSON.stringify({ compilerOptions, files: ['usage.ts', 'api.d.ts'] }));
    return await new Promise<Compiled>((resolve) => {
      execFile(process.execPath, [TSC, '-p', dir], (err, stdout, stderr) =>
        resolve({ ok: err === null, output: `${stdout}${stderr}` }),
      );
    });
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
}

describe('OpenAPI document: a client typed by openapi-typescript', function () {
  this.timeout(60000);
  const document = buildOpenApiDocument(planRoutes(referenceContracts()));

  it('switches over the error codes and reads every always-present field without a check', async () => {
    const result = await compileAgainst(document);
    expect(result.output).to.equal('');
    expect(result.ok).to.equal(true);
  });

  it('does not compile when the document leaves those fields optional or the code a plain string', async () => {
    const loose = JSON.parse(JSON.stringify(document));
    const schemas = loose.components.schemas;
    schemas.ErrorBody.required = ['error', 'code', 'timestamp'];
    schemas['AuthenticateCommand.Output'].required = ['accessToken', 'refreshToken', 'expiresIn'];
    schemas['GetUserQuery.Output'].required = [];
    const result = await compileAgainst(loose);
    expect(result.ok).to.equal(false);
    const refused = refusedLines(result);
    expect(refused).to.include('const id: string = e.correlationId;');
    expect(refused).to.include("case 'NOT_FOUND': return e.message;");
    expect(refused).to.include('const permissions: string[] = ok.user.permissions;');
    expect(refused).to.include('const id: string = user.userId + user.id;');
    const untyped = JSON.parse(JSON.stringify(document));
    delete untyped.components.schemas.ErrorBody.properties.code.enum;
    expect(refusedLines(await compileAgainst(untyped))).to.deep.equal(['const unknownCode: never = e.code;']);
  });
});
