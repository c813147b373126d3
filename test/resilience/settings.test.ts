import { expect } from 'chai';
import { resolveSettings } from '../../plugin/settings';
import { validateSettings } from '../../plugin/settings/validation';

describe('load shedding and circuit breaker settings', () => {
  it('default to 512 requests in flight per service, 5 failures and 10 s open', () => {
    expect(resolveSettings(validateSettings({}, {}), {})).to.include({
      maxInFlightPerService: 512,
      circuitFailureThreshold: 5,
      circuitOpenSeconds: 10,
    });
  });

  it('read the block first, then the environment; 0 failures turns the circuit breaker off', () => {
    const env = { MAX_IN_FLIGHT_PER_SERVICE: '8', CIRCUIT_FAILURE_THRESHOLD: '0', CIRCUIT_OPEN_SECONDS: '2' };
    expect(resolveSettings(validateSettings({}, env), env)).to.include({
      maxInFlightPerService: 8,
      circuitFailureThreshold: 0,
      circuitOpenSeconds: 2,
    });
    const block = { maxInFlightPerService: 64, circuitFailureThreshold: 3, circuitOpenSeconds: 30 };
    expect(resolveSettings(validateSettings(block, env), env)).to.include(block);
  });

  it('stop the start on a misspelt name or a value outside what is allowed, naming the setting', () => {
    expect(() => validateSettings({ maxInflightPerService: 8 }, {})).to.throw(
      /plugins\.contracts\.maxInflightPerService/,
    );
    expect(() => validateSettings({}, { MAX_IN_FLIGHT_PER_SERVICE: '0' })).to.throw(/MAX_IN_FLIGHT_PER_SERVICE.*>= 1/);
    expect(() => validateSettings({}, { MAX_IN_FLIGHT_PER_SERVICE: 'lots' })).to.throw(/MAX_IN_FLIGHT_PER_SERVICE/);
    expect(() => validateSettings({}, { CIRCUIT_FAILURE_THRESHOLD: '-1' })).to.throw(/CIRCUIT_FAILURE_THRESHOLD/);
    expect(() => validateSettings({}, { CIRCUIT_FAILURE_THRESHOLD: '2.5' })).to.throw(/CIRCUIT_FAILURE_THRESHOLD/);
    expect(() => validateSettings({}, { CIRCUIT_OPEN_SECONDS: '0' })).to.throw(/CIRCUIT_OPEN_SECONDS/);
    expect(() => validateSettings({ circuitOpenSeconds: 3601 }, {})).to.throw(/circuitOpenSeconds.*<= 3600/);
  });
});
