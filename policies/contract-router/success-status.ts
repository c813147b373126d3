import { classify } from '../../plugin/contracts/derive-routes';

/** Spec "Status codes": create 201, delete 204, every other success 200. */
export function successStatus(messageType: string, method: string): number {
  const { kind } = classify(messageType);
  if (kind === 'create' && method === 'POST') return 201;
  if (kind === 'delete' && method === 'DELETE') return 204;
  return 200;
}
