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

/** A user as the reference users service lists it (its contract's output: permissions included). */
function listedUser(i) {
  return { ...benchUser(`u-bench-${String(i).padStart(4, '0')}`), permissions: [] };
}

const payloads = new Map();

/**
 * The reply-size sweep's result: `{ payloadId, users }`, as many listed users as make its JSON text at least `bytes`
 * long (about 280 bytes each). Made once per size; (b)'s service and (c)'s answer the same bytes.
 */
function payload(bytes) {
  const known = payloads.get(bytes);
  if (known) return known;
  const users = [];
  const made = { payloadId: String(bytes), users };
  let size = JSON.stringify(made).length;
  while (size < bytes) {
    const u = listedUser(users.length);
    users.push(u);
    size += JSON.stringify(u).length + 1;
  }
  payloads.set(bytes, made);
  return made;
}

module.exports = { benchUser, listedUser, payload };
