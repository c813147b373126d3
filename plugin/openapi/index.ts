/** OpenAPI 3.1 generation from the discovered contracts (docs/operations.md "Operations endpoints"). */
export { buildOpenApiDocument, contractsFingerprint, type DocumentOptions, type OpenApiDocument } from './document';
export { OpenApiCache, type CachedDocument } from './cache';
export { toOpenApiPath, pathParameterNames } from './paths';
export { embedSchema, componentName } from './schema-embedding';
