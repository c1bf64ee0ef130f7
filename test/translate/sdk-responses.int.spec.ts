import { clientSuite } from './sdk-suite';

clientSuite('responses');
