import { expect } from 'chai';
import { resolveSettings } from '../../plugin/settings';
import { validateSettings } from '../../plugin/settings/validation';

describe('observability settings', () => {
  it('leaves metrics off, the access log on and text lines by default', () => {
    const s = resolveSettings({}, {});
    expect(s.metricsPort).to.equal(undefined);
    expect(s.metricsHost).to.equal('0.0.0.0');
    expect(s.accessLog).to.equal(true);
    expect(s.logFormat).to.equal('text');
    expect(s.metricsNaming).to.equal('prometheus');
  });

  it("takes OpenTelemetry's metric names when METRICS_NAMING (or metricsNaming) says otel", () => {
    expect(resolveSettings({}, { METRICS_NAMING: 'otel' }).metricsNaming).to.equal('otel');
    expect(resolveSettings({ metricsNaming: 'prometheus' }, { METRICS_NAMING: 'otel' }).metricsNaming).to.equal(
      'prometheus',
    );
    expect(validateSettings({}, { METRICS_NAMING: 'otel' })).to.deep.equal({});
  });

  it('reads them from the block first, then the environment', () => {
    const env = { METRICS_PORT: '9464', METRICS_HOST: '127.0.0.1', ACCESS_LOG: 'false', LOG_FORMAT: 'json' };
    expect(resolveSettings({}, env)).to.include({
      metricsPort: 9464,
      metricsHost: '127.0.0.1',
      accessLog: false,
      logFormat: 'json',
    });
    expect(resolveSettings({ metricsPort: 9100, accessLog: true, logFormat: 'text' }, env)).to.include({
      metricsPort: 9100,
      accessLog: true,
      logFormat: 'text',
    });
  });

  it('stops the start on a value outside what is allowed, naming it', () => {
    expect(() => validateSettings({}, { METRICS_PORT: '70000' })).to.throw(/METRICS_PORT/);
    expect(() => validateSettings({}, { METRICS_PORT: 'abc' })).to.throw(/METRICS_PORT/);
    expect(() => validateSettings({}, { LOG_FORMAT: 'xml' })).to.throw(/LOG_FORMAT/);
    expect(() => validateSettings({}, { ACCESS_LOG: 'yes' })).to.throw(/ACCESS_LOG/);
    expect(() => validateSettings({ metricsPort: 0 }, {})).to.throw(/metricsPort/);
    expect(() => validateSettings({}, { METRICS_NAMING: 'opentelemetry' })).to.throw(/METRICS_NAMING/);
    expect(() => validateSettings({ metricsNaming: 'OTel' }, {})).to.throw(/metricsNaming/);
    expect(() => validateSettings({ metricNaming: 'otel' }, {})).to.throw(/metricNaming.*not a setting/);
  });
});
