/** `node dist/scripts/broker-definitions.js …` in this repository: the package's contracts-broker-definitions command. */
import { main } from '../plugin/cli/contracts-broker-definitions';

main();
