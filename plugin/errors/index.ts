export * from './codes';
export * from './gateway-error';
export * from './error-body';
export * from './describe';
