'use strict';
/**
 * The user every configuration answers, shaped like the reference users service's GET answer, so the
 * bytes on the wire are comparable across configurations.
 */
function benchUser(userId) {
  return {
    userId,
    id: userId,
    email: 'ada@example.com',
    firstName: 'Ada',
    lastName: 'Lovelace',
    name: 'Ada Lovelace',
    role: 'user',
    createdAt: '2024-01-01T00:00:00.000Z',
    updatedAt: '2024-01-01T00:00:00.000Z',
  };
}

module.exports = { benchUser };
