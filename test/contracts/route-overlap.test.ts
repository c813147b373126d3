import { expect } from 'chai';
import { overlaps, routeShape } from '../../plugin/contracts/route-overlap';

const meet = (a: string, b: string): boolean => {
  const [ma, pa] = a.split(' ') as [string, string];
  const [mb, pb] = b.split(' ') as [string, string];
  return overlaps(routeShape(ma, pa), routeShape(mb, pb));
};

describe('route overlap: whether two routes can take the same request', () => {
  it('ignores case, a trailing slash and parameter names, as the host matches', () => {
    expect(meet('POST /api/login', 'POST /api/LOGIN')).to.equal(true);
    expect(meet('POST /api/login', 'post /api/login/')).to.equal(true);
    expect(meet('GET /api/users/:userId', 'GET /api/users/:aaa')).to.equal(true);
    expect(meet('GET /api/users/:userId', 'GET /api/users/me')).to.equal(true);
  });

  it('keeps apart other methods, other lengths and other literal segments', () => {
    expect(meet('GET /api/login', 'POST /api/login')).to.equal(false);
    expect(meet('GET /api/users', 'GET /api/users/:id')).to.equal(false);
    expect(meet('GET /api/users/:id', 'GET /api/users/report/:year')).to.equal(false);
    expect(meet('GET /api/users', 'GET /api/usersettings')).to.equal(false);
  });

  it('lets a pattern segment match whatever follows it', () => {
    expect(meet('GET /api/files/*', 'GET /api/files/a/b/c')).to.equal(true);
    expect(meet('GET /api/files/*', 'GET /api/other/a')).to.equal(false);
    expect(meet('GET /api/users/:id?', 'GET /api/users')).to.equal(true);
  });
});
