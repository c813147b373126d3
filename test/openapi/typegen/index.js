'use strict';
// Resolved from here, so openapi-typescript finds the TypeScript 5 installed beside it.
module.exports = require('openapi-typescript');
