import { expect } from 'chai';
import { BrokerList, parseBrokerList, redactBusUrl } from '../../plugin/bus/amqp/broker-list';
import { workQueueTypeOf } from '../../plugin/bus/amqp/wire';
import { validateSettings } from '../../plugin/settings/validation';

const CLUSTER = 'amqp://svc:s3cret@h1:5672/prod, amqp://svc:s3cret@h2:5673/prod,amqp://svc:s3cret@h3/prod';

describe('BUS_URL with several brokers (a cluster)', () => {
  it('parses every address: node, redacted form, user, vhost and what amqplib connects with', () => {
    const list = parseBrokerList(CLUSTER);
    expect(list.map((a) => a.node)).to.deep.equal(['h1:5672', 'h2:5673', 'h3:5672']);
    expect(list.map((a) => a.redacted)).to.deep.equal(['amqp://h1:5672/prod', 'amqp://h2:5673/prod', 'amqp://h3/prod']);
    expect(list[1].options).to.deep.include({
      protocol: 'amqp',
      hostname: 'h2',
      port: 5673,
      username: 'svc',
      password: 's3cret',
      vhost: 'prod',
    });
    expect(list.every((a) => a.user === 'svc' && a.vhost === 'prod')).to.equal(true);
    // amqplib's defaults: guest/guest and the vhost /, and the URL's query parameters as fields
    const [anon] = parseBrokerList('amqps://h9?heartbeat=10&frameMax=8192');
    expect(anon.options).to.deep.include({
      protocol: 'amqps',
      port: 5671,
      username: 'guest',
      password: 'guest',
      vhost: '',
      heartbeat: 10,
      frameMax: 8192,
    });
    expect(anon.vhost).to.equal('/');
  });

  it('heartbeats every 5 s unless an address names its own (?heartbeat=, 0 turning them off)', () => {
    const [plain, own, off] = parseBrokerList('amqp://h1,amqp://h2?heartbeat=12,amqp://h3?heartbeat=0');
    expect(plain.options.heartbeat).to.equal(5);
    expect(own.options.heartbeat).to.equal(12);
    expect(off.options.heartbeat).to.equal(0);
  });

  it('refuses a list mixing users or vhosts in one line that names no password', () => {
    for (const mixed of ['amqp://a:pw1@h1,amqp://b:pw1@h2', 'amqp://a:pw1@h1/x,amqp://a:pw1@h2/y']) {
      let message = '';
      try {
        parseBrokerList(mixed);
      } catch (err) {
        message = (err as Error).message;
      }
      expect(message).to.match(
        /^BUS_URL lists brokers with different users or vhosts \(.*\): every address must use the same user and vhost$/,
      );
      expect(message).not.to.contain('pw1');
      expect(message.split('\n')).to.have.length(1);
    }
    expect(() => parseBrokerList('amqp://u:p@h1,http://u:p@h2')).to.throw(/not an amqp:\/\/ or amqps:\/\/ URL/);
  });

  it('the gateway refuses such a BUS_URL at start with the setting named, and takes a good list', () => {
    expect(() => validateSettings({}, { BUS_URL: 'amqp://a:pw@h1,amqp://b:pw@h2' })).to.throw(
      /BUS_URL.*different users or vhosts/,
    );
    expect(() => validateSettings({}, { BUS_URL: 'amqp://a:pw@h1,not a url' })).to.throw(/BUS_URL/);
    // One address of the list wrong: named without its credentials, with what the setting must be.
    expect(() => validateSettings({}, { BUS_URL: 'amqp://a:pw9@h1,http://a:pw9@h2' })).to.throw(
      /^BUS_URL is not valid \(http:\/\/h2\/? is not an amqp:\/\/ or amqps:\/\/ URL\); it must be embedded or an amqp:\/\/ /,
    );
    expect(() => validateSettings({}, { BUS_URL: CLUSTER })).not.to.throw();
  });

  it('redacts every address for messages', () => {
    expect(redactBusUrl(CLUSTER)).to.equal('amqp://h1:5672/prod,amqp://h2:5673/prod,amqp://h3/prod');
    expect(redactBusUrl('amqp://a:pw@h1,amqp://b:pw@h2')).to.equal('the configured BUS_URL');
  });

  it('starts on a random node (processes spread) and moves round the list, re-filling the object amqplib reads', () => {
    const starts = [0, 0.34, 0.67, 0.999].map((r) => new BrokerList(CLUSTER, () => r).current.node);
    expect(starts).to.deep.equal(['h1:5672', 'h2:5673', 'h3:5672', 'h3:5672']);
    const list = new BrokerList(CLUSTER, () => 0.5);
    const target = list.target;
    const seen: unknown[] = [];
    for (let i = 0; i < 4; i++) {
      seen.push(target.hostname);
      list.advance();
    }
    expect(seen).to.deep.equal(['h2', 'h3', 'h1', 'h2']);
    expect(list.target).to.equal(target);
    expect(list.scrub('ACCESS_REFUSED for svc with s3cret')).to.equal('ACCESS_REFUSED for svc with ***');
  });

  it('BUS_QUEUE_TYPE: classic by default, quorum when asked, anything else refused', () => {
    expect(workQueueTypeOf(undefined)).to.equal('classic');
    expect(workQueueTypeOf(' Quorum ')).to.equal('quorum');
    expect(() => workQueueTypeOf('stream')).to.throw('BUS_QUEUE_TYPE must be classic or quorum');
  });
});
